package log

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// A ConnLimiter is a listener that keeps at most a fixed number of
// connections admitted, for an http.Server that it serves (Serve). So a
// burst of connections, or thousands held idle, cannot grow the process
// without bound, and the clients already being served keep being served:
//
//   - An admitted connection keeps its slot for as long as it is busy, or
//     idle for less than five seconds: a client that sends its requests one
//     after the other on its keep-alive connection, or paces them up to
//     five seconds apart, is never cut off to make room for new ones.
//   - At the cap, the connection idle longest, if idle for five seconds or
//     more, is closed to make room for a new one, which otherwise waits
//     until it is (or a slot frees), and the next ones wait in the kernel's
//     accept queue. (Closing races with a client that reuses the connection
//     at that moment, as an idle timeout does: HTTP clients retry such a
//     request when they can tell it was not sent, and should retry POST
//     /add otherwise, which is idempotent.)
//   - At the cap with every admitted connection busy, a new connection is
//     refused: its request is answered 503 overloaded with Retry-After: 1
//     and the connection closed, without reaching the handler. At most a
//     quarter of the cap (at least 16) are being refused at once; past
//     that, new connections wait in the kernel's accept queue.
//
// Serve also makes the answers that net/http writes itself, before any
// handler runs (a malformed request, headers over MaxHeaderBytes, an
// unsupported Transfer-Encoding or Expect), JSON errors like the log's own
// (see jsonServerError), and hands OPTIONS * to the handler.
//
// Its methods are safe for concurrent use.
type ConnLimiter struct {
	net.Listener
	minIdle  time.Duration // minIdleToClose, but for tests
	slots    chan struct{} // one token per admitted connection
	refusals chan struct{} // one token per connection being refused
	wake     chan struct{} // a connection went idle
	done     chan struct{} // closed by Close
	once     sync.Once

	// idleMu guards idle: the admitted connections waiting for a request,
	// and since when.
	idleMu sync.Mutex
	idle   map[net.Conn]time.Time
}

// minIdleToClose is how long a connection must have been idle before
// Accept closes it to make room.
const minIdleToClose = 5 * time.Second

// LimitConns returns a ConnLimiter that admits at most max of ln's
// connections at a time.
func LimitConns(ln net.Listener, max int) *ConnLimiter {
	return &ConnLimiter{
		Listener: ln,
		minIdle:  minIdleToClose,
		slots:    make(chan struct{}, max),
		refusals: make(chan struct{}, refusalsFor(max)),
		idle:     make(map[net.Conn]time.Time),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
}

// ConnsFDs returns the most connections a ConnLimiter of max holds open
// at once: max admitted, those being refused, and one accepted and
// waiting for a place. Each is a file descriptor.
func ConnsFDs(max int) int { return max + refusalsFor(max) + 1 }

// refusalsFor is how many connections a limiter of max refuses at once.
func refusalsFor(n int) int { return max(16, n/4) }

// Accept returns the next connection once it is admitted, or to be refused.
func (l *ConnLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	refused, err := l.admit()
	if err != nil {
		c.Close()
		return nil, err
	}
	return &limitedConn{Conn: c, l: l, refused: refused}, nil
}

// admit takes a slot, closing an idle connection for it if need be, or a
// refusal token when every admitted connection is busy.
func (l *ConnLimiter) admit() (refused bool, err error) {
	for {
		select {
		case l.slots <- struct{}{}:
			return false, nil
		default:
		}
		wait := l.closeIdle()
		if wait == 0 {
			continue // a slot was freed
		}
		// Take a slot, or wait for one until the connection idle longest
		// can be closed or another goes idle; with none idle, take a
		// refusal token rather than wait.
		retry := time.NewTimer(max(wait, 0))
		var refuse chan struct{} // nil: never ready
		if wait < 0 {
			retry.Stop()
			refuse = l.refusals
		}
		select {
		case l.slots <- struct{}{}:
		case refuse <- struct{}{}:
			refused = true
		case <-l.done:
			err = net.ErrClosed
		case <-l.wake:
			retry.Stop()
			continue
		case <-retry.C:
			continue
		}
		retry.Stop()
		return refused, err
	}
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
// installed in srv (ConnState and ConnContext, after srv's own, and a
// handler that answers refused connections).
func (l *ConnLimiter) Serve(srv *http.Server) error {
	h, state, connCtx := srv.Handler, srv.ConnState, srv.ConnContext
	if h == nil {
		h = http.DefaultServeMux
	}
	srv.DisableGeneralOptionsHandler = true
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
		if c, ok := r.Context().Value(connKey{}).(*limitedConn); ok && c.refused {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusServiceUnavailable, codeOverloaded,
				"the log is serving as many connections as it can; retry later", 1)
			return
		}
		h.ServeHTTP(w, r)
	})
	return srv.Serve(l)
}

type connKey struct{}

// connState tracks idle admitted connections.
func (l *ConnLimiter) connState(c net.Conn, s http.ConnState) {
	if lc, ok := c.(*limitedConn); ok && lc.refused {
		return
	}
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

// limitedConn gives its slot or refusal token back when it is closed, and
// writes net/http's own error answers as JSON.
type limitedConn struct {
	net.Conn
	l       *ConnLimiter
	refused bool // admitted only to be answered 503
	once    sync.Once
}

func (c *limitedConn) Write(p []byte) (int, error) {
	if j, ok := jsonServerError(p); ok {
		if _, err := c.Conn.Write(j); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		if c.refused {
			<-c.l.refusals
			return
		}
		c.l.idleMu.Lock()
		delete(c.l.idle, c)
		c.l.idleMu.Unlock()
		<-c.l.slots
	})
	return err
}
