package log

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// LimitConns returns a listener that keeps at most max connections open,
// and the http.Server.ConnState hook that must be installed with it.
// When max connections are open, Accept closes the connection that has
// been idle longest, if it has been idle for at least a second, or else
// waits until one closes or qualifies; the kernel's accept queue holds the
// connections that wait. So a burst of connections, or thousands held idle,
// cannot grow the process without bound, and a client that keeps its
// connection busy is not cut off between two of its requests.
//
// Closing an idle connection races with a client that reuses it at that
// moment, as an idle timeout does: HTTP clients retry such a request when
// they can tell it was not sent, and should retry POST /add otherwise
// (Docket's answers are idempotent).
func LimitConns(ln net.Listener, max int) (net.Listener, func(net.Conn, http.ConnState)) {
	l := &connLimiter{
		Listener: ln,
		minIdle:  minIdleToClose,
		slots:    make(chan struct{}, max),
		idle:     make(map[net.Conn]time.Time),
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	return l, l.connState
}

// minIdleToClose is how long a connection must have been idle before
// Accept closes it to make room.
const minIdleToClose = time.Second

type connLimiter struct {
	net.Listener
	minIdle time.Duration // minIdleToClose, but for tests
	slots   chan struct{} // one token per open connection
	wake    chan struct{} // a connection went idle
	done    chan struct{} // closed by Close
	once    sync.Once

	// idleMu guards idle: the open connections waiting for a request, and
	// since when.
	idleMu sync.Mutex
	idle   map[net.Conn]time.Time
}

func (l *connLimiter) Accept() (net.Conn, error) {
	if err := l.acquire(); err != nil {
		return nil, err
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, l: l}, nil
}

// acquire takes a slot, closing an idle connection for it if need be.
func (l *connLimiter) acquire() error {
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
func (l *connLimiter) await(wait time.Duration) (acquired bool, err error) {
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
// minIdleToClose, which frees its slot, and returns 0. Otherwise it returns
// how long until the longest idle one qualifies, or -1 if none is idle.
func (l *connLimiter) closeIdle() time.Duration {
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

func (l *connLimiter) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

func (l *connLimiter) connState(c net.Conn, s http.ConnState) {
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
	l    *connLimiter
	once sync.Once
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
