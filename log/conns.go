package log

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// A ConnLimiter is a listener that keeps at most a fixed number of
// connections open (and one more accepted, held until a slot frees), for an http.Server that installs its ConnState hook
// and serves through its Handler wrapper. So a burst of connections, or
// thousands held idle, cannot grow the process without bound, and the
// clients are served in turn:
//
//   - At the cap, Accept takes the next connection from the kernel's queue
//     and holds it, unserved, until a slot frees; the rest wait in the
//     queue.
//   - While a connection is held, every answer carries Connection: close,
//     so busy keep-alive connections give up their slots in turn.
//   - The connection idle longest, if idle for at least a second, is
//     closed to make room. (This races with a client that reuses it at
//     that moment, as an idle timeout does: HTTP clients retry such a
//     request when they can tell it was not sent, and should retry
//     POST /add otherwise, which is idempotent.)
//
// Its methods are safe for concurrent use.
type ConnLimiter struct {
	net.Listener
	minIdle time.Duration // minIdleToClose, but for tests
	minHold time.Duration // minHoldToRotate, but for tests
	slots   chan struct{} // one token per open connection
	wake    chan struct{} // a connection went idle
	done    chan struct{} // closed by Close
	once    sync.Once
	held    atomic.Bool // a connection waits for a slot

	// idleMu guards idle: the open connections waiting for a request, and
	// since when.
	idleMu sync.Mutex
	idle   map[net.Conn]time.Time
}

// minIdleToClose is how long a connection must have been idle before
// Accept closes it to make room, and minHoldToRotate how long it must have
// had its slot before its answers close it while another waits. A client
// that keeps its connection busy is thus cut off between two requests at
// most every few seconds, while others still get their turn.
const (
	minIdleToClose  = time.Second
	minHoldToRotate = 3 * time.Second
)

// LimitConns returns a ConnLimiter that keeps at most max of ln's
// connections open.
func LimitConns(ln net.Listener, max int) *ConnLimiter {
	return &ConnLimiter{
		Listener: ln,
		minIdle:  minIdleToClose,
		minHold:  minHoldToRotate,
		slots:    make(chan struct{}, max),
		idle:     make(map[net.Conn]time.Time),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
}

// Accept returns the next connection once it has a slot.
func (l *ConnLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := l.acquire(); err != nil {
		c.Close()
		return nil, err
	}
	return &limitedConn{Conn: c, l: l, since: time.Now()}, nil
}

// acquire takes a slot, closing an idle connection for it if need be.
func (l *ConnLimiter) acquire() error {
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	l.held.Store(true)
	defer l.held.Store(false)
	for {
		select {
		case l.slots <- struct{}{}:
			return nil
		default:
		}
		if wait := l.closeIdle(); wait != 0 {
			if ok, err := l.await(wait); ok || err != nil {
				return err
			}
		}
	}
}

// await waits for a free slot, which it takes, or until a connection goes
// idle or wait (if positive) has passed.
func (l *ConnLimiter) await(wait time.Duration) (acquired bool, err error) {
	var retry <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		retry = t.C
	}
	select {
	case l.slots <- struct{}{}:
		return true, nil
	case <-l.wake:
	case <-retry:
	case <-l.done:
		return false, net.ErrClosed
	}
	return false, nil
}

// closeIdle closes the connection idle longest if it has been idle for
// minIdle, which frees its slot, and returns 0. Otherwise it returns how
// long until the longest idle one qualifies, or -1 if none is idle.
func (l *ConnLimiter) closeIdle() time.Duration {
	l.idleMu.Lock()
	var victim net.Conn
	var since time.Time
	for c, t := range l.idle {
		if victim == nil || t.Before(since) {
			victim, since = c, t
		}
	}
	if victim == nil {
		l.idleMu.Unlock()
		return -1
	}
	if d := l.minIdle - time.Since(since); d > 0 {
		l.idleMu.Unlock()
		return d
	}
	delete(l.idle, victim)
	l.idleMu.Unlock()
	victim.Close()
	return 0
}

// Close closes the listener; an Accept waiting for a slot returns.
func (l *ConnLimiter) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// Serve serves srv's handler on the listener, with the hooks it needs
// installed in srv (ConnState and ConnContext, after srv's own).
func (l *ConnLimiter) Serve(srv *http.Server) error {
	h, state, connCtx := srv.Handler, srv.ConnState, srv.ConnContext
	if h == nil {
		h = http.DefaultServeMux
	}
	srv.ConnState = func(c net.Conn, s http.ConnState) {
		if state != nil {
			state(c, s)
		}
		l.connState(c, s)
	}
	srv.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
		if connCtx != nil {
			ctx = connCtx(ctx, c)
		}
		return context.WithValue(ctx, connKey{}, c)
	}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*limitedConn); ok && l.held.Load() && time.Since(c.since) >= l.minHold {
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
	return srv.Serve(l)
}

type connKey struct{}

// connState tracks idle connections.
func (l *ConnLimiter) connState(c net.Conn, s http.ConnState) {
	l.idleMu.Lock()
	defer l.idleMu.Unlock()
	switch s {
	case http.StateIdle:
		l.idle[c] = time.Now()
		select {
		case l.wake <- struct{}{}:
		default:
		}
	default:
		delete(l.idle, c)
	}
}

// limitedConn gives its slot back when it is closed.
type limitedConn struct {
	net.Conn
	l     *ConnLimiter
	since time.Time // when it got its slot
	once  sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.idleMu.Lock()
		delete(c.l.idle, c)
		c.l.idleMu.Unlock()
		<-c.l.slots
	})
	return err
}
