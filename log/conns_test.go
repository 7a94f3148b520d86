package log

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLimitConns checks that clients holding idle keep-alive connections
// do not lock out a new client (an idle one is closed for it), and that the
// listener never has more than max connections admitted.
func TestLimitConns(t *testing.T) {
	const max = 3
	url, cl := serveLimited(t, max, 0, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	url += "/"

	// Ten clients, one after the other, each leaving its keep-alive
	// connection idle. A client may be refused (503) if it comes before
	// the server has seen the last connection go idle; it then retries, as
	// Retry-After says.
	for i := range 10 {
		c := &http.Client{Transport: &http.Transport{}}
		status, refusals := 0, 0
		for ; refusals < 100; refusals++ {
			resp, err := c.Get(url)
			if err != nil {
				t.Fatalf("GET by client %d with %d idle connections held = %v, want an answer", i, min(i, max), err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if status = resp.StatusCode; status != 503 {
				if status != 200 || string(b) != "ok" {
					t.Errorf("GET by client %d = %d %q, want 200 ok", i, status, b)
				}
				break
			}
			time.Sleep(time.Millisecond)
		}
		if status != 200 {
			t.Fatalf("GET by client %d with %d idle connections held: refused %d times, want an idle one closed for it", i, min(i, max), refusals)
		}
	}
	// max admitted, one accepted while an idle one was being closed, and
	// those refused.
	if p := cl.peak.Load(); p > int64(max+1+refusalsFor(max)) {
		t.Errorf("peak open connections = %d, want at most %d", p, max+1+refusalsFor(max))
	}
}

// TestLimitConnsBusy checks that at the cap, with every admitted connection
// busy, a new connection is answered 503 overloaded (JSON, Retry-After)
// and closed, while the clients already admitted keep their keep-alive
// connections and their answers: a burst of new connections cannot take
// the place of a client that is being served.
func TestLimitConnsBusy(t *testing.T) {
	const max = 2
	in := make(chan struct{})
	release := make(chan struct{})
	// No idle connection is closed to make room.
	url, cl := serveLimited(t, max, time.Hour, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			in <- struct{}{}
			<-release
		}
		io.WriteString(w, "ok")
	})

	// Two clients, each with its connection busy in a slow request.
	clients := []*http.Client{{Transport: &http.Transport{}}, {Transport: &http.Transport{}}}
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() {
			resp, err := c.Get(url + "/slow")
			if err != nil {
				t.Errorf("slow GET = %v", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
		<-in
	}
	// New connections are refused at once, each with an answer.
	for i := range 2 * refusalsFor(max) {
		resp, err := (&http.Client{Transport: &http.Transport{}}).Get(url + "/")
		if err != nil {
			t.Fatalf("GET on new connection %d while all are busy = %v, want 503", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct{ Error, Message string }
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !resp.Close ||
			json.Unmarshal(b, &e) != nil || e.Error != codeOverloaded {
			t.Fatalf("GET on new connection %d while all are busy = %d %q (Retry-After %q, close %v), want 503 overloaded with Retry-After, closed",
				i, resp.StatusCode, b, resp.Header.Get("Retry-After"), resp.Close)
		}
	}
	close(release)
	wg.Wait()
	// The admitted clients go on, on the connections they had.
	for i, c := range clients {
		reused := false
		trace := &httptrace.ClientTrace{GotConn: func(ci httptrace.GotConnInfo) { reused = ci.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), "GET", url+"/", nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET by admitted client %d after the refusals = %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !reused {
			t.Errorf("GET by admitted client %d after the refusals = %d (connection reused %v), want 200 on its connection", i, resp.StatusCode, reused)
		}
	}
	if p := cl.peak.Load(); p > int64(max+refusalsFor(max)) {
		t.Errorf("peak open connections = %d, want at most %d", p, max+refusalsFor(max))
	}
}

// serveLimited serves h on a loopback listener limited to max connections,
// closing idle ones after minIdle, until the test ends, and returns its
// URL and the listener under the limiter, which counts connections.
func serveLimited(t *testing.T, max int, minIdle time.Duration, h http.HandlerFunc) (string, *countingListener) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	lln := LimitConns(cl, max)
	lln.minIdle = minIdle
	srv := &http.Server{Handler: h}
	go lln.Serve(srv)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), cl
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
