package log

import (
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
)

// TestLimitConns checks that a server behind LimitConns never has more than
// max connections open (and one held), and that clients holding idle keep-alive
// connections do not lock out a new client: an idle one is closed for it.
func TestLimitConns(t *testing.T) {
	const max = 3
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	lln := LimitConns(cl, max)
	lln.minIdle, lln.minHold = 0, 0
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
	}
	go lln.Serve(srv)
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/"

	// Ten clients, each with its own keep-alive connection left idle.
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			c := &http.Client{Transport: &http.Transport{}}
			for range 3 {
				resp, err := c.Get(url)
				if err != nil {
					// The server may close an idle connection just as the
					// client reuses it; a new request then succeeds.
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "ok" {
					t.Errorf("GET = %q, want ok", b)
				}
			}
		})
	}
	wg.Wait()
	// A new client still gets through while the others hold connections.
	resp, err := (&http.Client{Transport: &http.Transport{}}).Get(url)
	if err != nil {
		t.Fatalf("GET with %d idle connections held = %v, want an answer", max, err)
	}
	resp.Body.Close()
	// max served, and one accepted and held until a slot frees.
	if p := cl.peak.Load(); p > max+1 {
		t.Errorf("peak open connections = %d, want at most %d", p, max+1)
	}
}

// countingListener counts the connections open on the listener that
// LimitConns wraps: each is counted from its accept to its close.
type countingListener struct {
	net.Listener
	open, peak atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
