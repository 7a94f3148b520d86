package aws_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/docketlog/docket/internal/tlogtest"
)

// TestAmbiguousCommit: the connection of Tessera's sequencing transaction
// dies after its COMMIT reached the database and committed, before the
// answer came back (a proxy on loopback forwards the COMMIT, waits for the
// server's answer, and drops both sides instead of passing it on). The
// append fails without saying whether it happened; the client tries again.
// The entry must be in the log exactly once, and the retry answered with
// its index.
func TestAmbiguousCommit(t *testing.T) {
	p := newPlace(t)
	k := newSigner(t)
	px := newCommitDropper(t, p.dsn)
	p.dsn = px.dsn
	w := p.start(t, k, t.TempDir())
	// The empty log's checkpoint is published first.
	for _, err := w.Health(t.Context()); err != nil; _, err = w.Health(t.Context()) {
		time.Sleep(10 * time.Millisecond)
	}

	e := entries(tlogtest.NewIssuer(t), "ambiguous", 1)[0]
	px.arm()
	first, err := w.Add(t.Context(), e)
	if px.dropped.Load() != 1 {
		t.Fatalf("the proxy dropped %d sequencing commits, want 1 (Add = %v, %v)", px.dropped.Load(), first, err)
	}
	if err == nil {
		// The log may learn the outcome itself; then it must be right.
		t.Logf("Add(entry whose commit lost its answer) = index %d", first.Index)
	} else {
		t.Logf("Add(entry whose commit lost its answer) = %v", err)
	}
	r, err := w.Add(t.Context(), e)
	if err != nil {
		t.Fatalf("Add(the same entry again) = %v", err)
	}
	i := k.verify(t, e, r.Proof)
	if first != nil && first.Index != i {
		t.Errorf("the entry was answered at %d, then at %d", first.Index, i)
	}
	w.close(t)
	checkBucket(t, p, map[string]uint64{string(e): i})
}

// commitDropper is a dbProxy that, once armed, lets one sequencing
// transaction of Tessera's AWS driver (the connection that sent INSERT
// INTO Seq) commit, and drops that connection before the client reads the
// answer to its COMMIT.
type commitDropper struct {
	*dbProxy
	armed   atomic.Bool
	dropped atomic.Int32
}

func newCommitDropper(t *testing.T, dsn string) *commitDropper {
	px := &commitDropper{}
	px.dbProxy = newDBProxy(t, dsn, func(c *proxyConn, q []byte) bool {
		switch {
		case bytes.HasPrefix(q, []byte("INSERT INTO Seq(")):
			c.sequencing = true
		case c.sequencing && bytes.EqualFold(q, []byte("COMMIT")) && px.armed.CompareAndSwap(true, false):
			px.dropped.Add(1)
			return true
		}
		return false
	})
	return px
}

func (px *commitDropper) arm() { px.armed.Store(true) }

// dbProxy is a TCP proxy in front of a MySQL server that shows each
// statement a client sends (COM_QUERY, COM_STMT_PREPARE) to a hook before
// passing it on. The hook may block, and returns true to drop the
// connection once the server answers that statement (the statement runs,
// the client never learns its outcome).
type dbProxy struct {
	dsn  string
	hook func(c *proxyConn, q []byte) bool
}

// proxyConn is the state of one proxied connection that hooks keep.
type proxyConn struct {
	sequencing bool // it sent INSERT INTO Seq
}

func newDBProxy(t *testing.T, dsn string, hook func(*proxyConn, []byte) bool) *dbProxy {
	t.Helper()
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	network, upstream := cfg.Net, cfg.Addr
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cfg.Net, cfg.Addr = "tcp", ln.Addr().String()
	px := &dbProxy{dsn: cfg.FormatDSN(), hook: hook}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial(network, upstream)
			if err != nil {
				c.Close()
				continue
			}
			go px.relay(c, s)
		}
	}()
	return px
}

// relay passes the packets of one connection between client c and server
// s, showing the client's statements to the hook.
func (px *dbProxy) relay(c, s net.Conn) {
	var once sync.Once
	closeBoth := func() { once.Do(func() { c.Close(); s.Close() }) }
	defer closeBoth()
	var drop atomic.Bool // the hook's statement went to the server: drop its answer
	go func() {
		defer closeBoth()
		buf := make([]byte, 64<<10)
		for {
			n, err := s.Read(buf)
			if n > 0 && drop.Load() {
				return
			}
			if n > 0 {
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	var state proxyConn
	hdr := make([]byte, 4)
	for {
		if _, err := io.ReadFull(c, hdr); err != nil {
			return
		}
		n := int(binary.LittleEndian.Uint32(append(hdr[:3:3], 0)))
		payload := make([]byte, n)
		if _, err := io.ReadFull(c, payload); err != nil {
			return
		}
		const comQuery, comStmtPrepare = 0x03, 0x16
		if len(payload) > 0 && (payload[0] == comQuery || payload[0] == comStmtPrepare) && px.hook(&state, payload[1:]) {
			drop.Store(true)
		}
		if _, err := s.Write(append(hdr, payload...)); err != nil {
			return
		}
	}
}
