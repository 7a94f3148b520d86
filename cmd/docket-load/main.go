// Command docket-load is Docket's log load benchmark. It offers signed
// receipts to a log at fixed rates (open loop, latency measured from each
// request's scheduled time, so a slow server cannot hide its queueing) and
// then as fast as a fixed number of clients can (closed loop), and reports
// submit→proof latency percentiles and sustained receipts/s as a Markdown
// table.
//
// With -mode tessera it sends the same entry bytes to Tessera's POSIX
// conformance server (github.com/transparency-dev/tessera/cmd/conformance/posix),
// whose POST /add answers with the sequenced index (no signature checks, no
// proof, no wait for a published checkpoint), for a side-by-side baseline.
//
// Usage:
//
//	docket-load -url http://127.0.0.1:7780[,URL...] [-mode docket|tessera] [-rates 250,500,1000] [-duration 10s] [-clients 256] [-batch N] [-bodies N] [-lone N]
//	docket-load -keygen FILE   (a signer key for the baseline server's -private_key)
//
// With -mode reads it reads a log instead: for -duration, -clients clients
// each GET a random hash tile or entry bundle of the tree in the log's
// checkpoint (full ones, and the partial ones at the right edge), and it
// reports requests/s and latency; the URL is any tlog-tiles prefix (a
// docket-log, a bucket, a CDN).
//
// With -batch N (N > 1) the closed loop sends N entries per request in the
// batch form of POST /add, and counts each entry with its own answer.
//
// bench.sh in this directory runs both servers side by side;
// bench-interleaved.sh measures docket-log (single adds, batches, an older
// binary) and Tessera's POSIX server in turn, round after round, with each
// server's CPU per entry; bench-aws.sh runs docket-log -storage aws against
// Tessera's AWS conformance server.
package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketlog/docket/receipts"
	"github.com/transparency-dev/tessera/api/layout"
	"golang.org/x/mod/sumdb/note"
)

func main() {
	var (
		url      = flag.String("url", "http://127.0.0.1:7780", "log URL; several, comma-separated, take requests in turn (writers of one log)")
		mode     = flag.String("mode", "docket", "docket (POST /add answers with a proof), tessera (conformance server: answered once sequenced) or tessera-published (conformance server, each request counted done once a published checkpoint covers its index, as docket-log answers)")
		rates    = flag.String("rates", "250,500,1000", "offered rates in receipts/s, comma-separated")
		duration = flag.Duration("duration", 10*time.Second, "duration of each fixed-rate run and of the closed-loop run")
		clients  = flag.Int("clients", 256, "concurrent clients in the closed-loop run (0: skip it)")
		maxOut   = flag.Int("max-outstanding", 8192, "open-loop requests in flight before the generator counts a drop")
		keys     = flag.Int("keys", 16, "distinct issuer keys")
		label    = flag.String("label", "", "label for the table (default: mode)")
		keygen   = flag.String("keygen", "", "write a signed-note signer key for a baseline server to this file and exit")
		lone     = flag.Int("lone", 0, "then send this many lone writes, each after the previous is answered and a random pause of up to 1.5s, and report their submit→proof time")
		cpURL    = flag.String("checkpoint-url", "", "with -mode tessera-published: the URL prefix of the published checkpoint, if not -url's (a bucket's)")
		nbodies  = flag.Int("bodies", 0, "signed bodies made for the closed loop (0: 12,000 per second of -duration)")
		batch    = flag.Int("batch", 1, "with -mode docket: entries per POST /add in the closed loop (more than 1: the batch form, each entry counted)")
	)
	flag.Parse()
	if *keygen != "" {
		skey, _, err := note.GenerateKey(rand.Reader, "localhost/tessera-baseline")
		if err == nil {
			err = os.WriteFile(*keygen, []byte(skey), 0o600)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "docket-load: error: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if *label == "" {
		*label = *mode
	}
	var rs []int
	for _, s := range strings.Split(*rates, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		r, err := strconv.Atoi(s)
		if err != nil || r <= 0 {
			fmt.Fprintf(os.Stderr, "docket-load: error: bad rate %q\n", s)
			os.Exit(2)
		}
		rs = append(rs, r)
	}
	tr := &http.Transport{MaxIdleConns: 0, MaxIdleConnsPerHost: 8192, IdleConnTimeout: time.Minute}
	c := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	g := newGenerator(*keys)
	var base []string
	for _, u := range strings.Split(*url, ",") {
		base = append(base, strings.TrimRight(strings.TrimSpace(u), "/"))
	}
	checkpointURL = strings.TrimRight(*cpURL, "/")
	if *mode == "reads" {
		fmt.Printf("| target | clients | requests | ok | other | requests/s | p50 ms | p90 ms | p99 ms | max ms |\n")
		fmt.Printf("|---|---|---|---|---|---|---|---|---|---|\n")
		fmt.Println(reads(c, base[0], *clients, *duration, *label))
		return
	}

	fmt.Printf("| target | offered/s | sent | ok | 503 | other | sustained/s | p50 ms | p90 ms | p99 ms | max ms |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		n := int(float64(r) * duration.Seconds())
		bodies := g.make(n)
		res := openLoop(c, base, *mode, bodies, r, *maxOut)
		fmt.Println(res.row(*label, strconv.Itoa(r)))
	}
	if *clients > 0 {
		// Each request needs a body of its own (both servers dedup): enough
		// for 12,000/s, more than docket-log sustains here; a docket run that
		// uses them all says so, its rate being a floor. Tessera's
		// conformance servers check no signature, so for them the bodies are
		// reused with a counter member added (see distinct).
		if *nbodies <= 0 {
			*nbodies = int(12000 * duration.Seconds())
		}
		bodies := g.make(*nbodies)
		var res *result
		if *batch > 1 && *mode == "docket" {
			res = closedLoopBatch(c, base, bodies, *batch, *clients, *duration)
		} else {
			res = closedLoop(c, base, *mode, bodies, *clients, *duration)
		}
		fmt.Println(res.row(*label, fmt.Sprintf("max (%d clients)", *clients)))
	}
	if *lone > 0 {
		res := loneWrites(c, base, *mode, g.make(*lone))
		fmt.Println(res.row(*label, "lone writes"))
	}
}

// generator makes distinct, validly signed log entries.
type generator struct {
	keys    []ed25519.PrivateKey
	session string
	seq     int64
}

func newGenerator(n int) *generator {
	g := &generator{session: fmt.Sprintf("load-%d", time.Now().UnixNano())}
	for range n {
		k, _ := receipts.GenerateKey()
		g.keys = append(g.keys, k)
	}
	return g
}

func (g *generator) make(n int) [][]byte {
	out := make([][]byte, n)
	var wg sync.WaitGroup
	start := g.seq
	g.seq += int64(n)
	chunk := (n + 7) / 8
	for w := 0; w*chunk < n; w++ {
		wg.Go(func() {
			for i := w * chunk; i < min(n, (w+1)*chunk); i++ {
				k := g.keys[i%len(g.keys)]
				lat := int64(3)
				r, err := receipts.Sign(k, receipts.Payload{Type: "protectmcp:decision", SessionID: g.session,
					Sequence: start + int64(i) + 1, HookEvent: "PreToolUse", Agent: "claude-code", ToolName: "Bash",
					ToolInputHash: "sha256:" + strings.Repeat("ab", 32), Decision: "allow", Reason: "cedar_allow",
					PolicyDigest: "sha256:" + strings.Repeat("cd", 32), HookLatencyMs: &lat})
				if err != nil {
					panic(err)
				}
				// The entry as receipts.Entry.Leaf builds it, without
				// verifying what was just signed.
				out[i] = fmt.Appendf(nil, `{"public_key":"%x","receipt":%s}`, k.Public().(ed25519.PublicKey), r)
			}
		})
	}
	wg.Wait()
	return out
}

type result struct {
	mu                    sync.Mutex
	lat                   []time.Duration
	sent, ok, busy, other atomic.Int64
	dropped               atomic.Int64
	first, last           time.Time
	firstErr              atomic.Value
}

func (r *result) record(start time.Time, status int, err error) {
	now := time.Now()
	switch {
	case err == nil && status == 200:
		r.ok.Add(1)
		r.mu.Lock()
		r.lat = append(r.lat, now.Sub(start))
		if now.After(r.last) {
			r.last = now
		}
		r.mu.Unlock()
	case err == nil && status == 503:
		r.busy.Add(1)
	default:
		r.other.Add(1)
		if err == nil {
			err = fmt.Errorf("status %d", status)
		}
		r.firstErr.CompareAndSwap(nil, err.Error())
	}
}

// percentile returns the q quantile of the sorted latencies in ms.
func (r *result) percentile(q float64) string {
	if len(r.lat) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(r.lat[min(len(r.lat)-1, int(q*float64(len(r.lat))))].Microseconds())/1000)
}

func (r *result) row(label, offered string) string {
	slices.Sort(r.lat)
	p := r.percentile
	sustained := 0.0
	if d := r.last.Sub(r.first).Seconds(); d > 0 {
		sustained = float64(r.ok.Load()) / d
	}
	s := fmt.Sprintf("| %s | %s | %d | %d | %d | %d | %.0f | %s | %s | %s | %s |", label, offered, r.sent.Load(), r.ok.Load(),
		r.busy.Load(), r.other.Load()+r.dropped.Load(), sustained, p(0.5), p(0.9), p(0.99), p(1))
	if e := r.firstErr.Load(); e != nil {
		fmt.Fprintf(os.Stderr, "docket-load: %s %s: first error: %v\n", label, offered, e)
	}
	if d := r.dropped.Load(); d > 0 {
		fmt.Fprintf(os.Stderr, "docket-load: %s %s: %d requests not sent (generator at -max-outstanding)\n", label, offered, d)
	}
	return s
}

func post(c *http.Client, base []string, mode string, i int, body []byte) (int, error) {
	u := base[i%len(base)]
	resp, err := c.Post(u+"/add", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if mode == "tessera-published" && resp.StatusCode == http.StatusOK {
		idx, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("conformance server answered %q, not an index", b)
		}
		if checkpointURL != "" {
			u = checkpointURL
		}
		publishedOf(c, u).await(idx)
	}
	return resp.StatusCode, nil
}

// checkpointURL is -checkpoint-url.
var checkpointURL string

// published follows the size of a log's published checkpoint, polling it
// every 5 ms (as docket-log polls its own), for requests that wait until
// a checkpoint covers their index.
type published struct {
	mu   sync.Mutex
	cond *sync.Cond
	size uint64
}

var (
	publishedMu sync.Mutex
	publishers  = map[string]*published{}
)

func publishedOf(c *http.Client, base string) *published {
	publishedMu.Lock()
	defer publishedMu.Unlock()
	if p := publishers[base]; p != nil {
		return p
	}
	p := &published{}
	p.cond = sync.NewCond(&p.mu)
	publishers[base] = p
	go func() {
		for {
			if resp, err := c.Get(base + "/checkpoint"); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if lines := strings.SplitN(string(b), "\n", 3); len(lines) == 3 {
					if n, err := strconv.ParseUint(lines[1], 10, 64); err == nil {
						p.mu.Lock()
						if n > p.size {
							p.size = n
							p.cond.Broadcast()
						}
						p.mu.Unlock()
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return p
}

// await returns once a published checkpoint covers index idx.
func (p *published) await(idx uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.size <= idx {
		p.cond.Wait()
	}
}

// openLoop sends bodies at rate per second, each at its scheduled time
// whatever the answers to earlier ones, and measures from that time.
func openLoop(c *http.Client, base []string, mode string, bodies [][]byte, rate, maxOut int) *result {
	r := &result{}
	sem := make(chan struct{}, maxOut)
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	r.first = time.Now()
	for i, b := range bodies {
		at := r.first.Add(time.Duration(i) * interval)
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		select {
		case sem <- struct{}{}:
		default:
			r.dropped.Add(1)
			continue
		}
		r.sent.Add(1)
		wg.Go(func() {
			defer func() { <-sem }()
			st, err := post(c, base, mode, i, b)
			r.record(at, st, err)
		})
	}
	wg.Wait()
	return r
}

// closedLoop runs n clients that each send their next body as soon as the
// previous one is answered, for d.
func closedLoop(c *http.Client, base []string, mode string, bodies [][]byte, n int, d time.Duration) *result {
	var next atomic.Int64
	return forClients(n, d, func(r *result) bool {
		i := int(next.Add(1) - 1)
		if i >= len(bodies) {
			if !strings.HasPrefix(mode, "tessera") {
				if i == len(bodies) {
					fmt.Fprintf(os.Stderr, "docket-load: closed loop: all %d bodies sent before %v: the rate is a floor\n", len(bodies), d)
				}
				return false
			}
		}
		r.sent.Add(1)
		start := time.Now()
		b := bodies[i%len(bodies)]
		if i >= len(bodies) {
			b = distinct(b, i)
		}
		st, err := post(c, base, mode, i, b)
		r.record(start, st, err)
		return true
	})
}

// closedLoopBatch is closedLoop with n entries per request, in the batch
// form of POST /add; each entry is recorded with its own answer.
func closedLoopBatch(c *http.Client, base []string, bodies [][]byte, b, n int, d time.Duration) *result {
	var next atomic.Int64
	return forClients(n, d, func(r *result) bool {
		i := int(next.Add(int64(b)) - int64(b))
		if i+b > len(bodies) {
			if i < len(bodies) {
				fmt.Fprintf(os.Stderr, "docket-load: closed loop: all %d bodies sent before %v: the rate is a floor\n", len(bodies), d)
			}
			return false
		}
		r.sent.Add(int64(b))
		start := time.Now()
		sts, err := postBatch(c, base, i, bodies[i:i+b])
		if err != nil {
			for range b {
				r.record(start, 0, err)
			}
			return true
		}
		for _, st := range sts {
			r.record(start, st, nil)
		}
		return true
	})
}

// postBatch sends entries as one batch POST /add and returns each entry's
// status from the answer.
func postBatch(c *http.Client, base []string, i int, entries [][]byte) ([]int, error) {
	body := append([]byte("["), bytes.Join(entries, []byte(","))...)
	body = append(body, ']')
	resp, err := c.Post(base[i%len(base)]+"/add", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		sts := make([]int, len(entries))
		for j := range sts {
			sts[j] = resp.StatusCode
		}
		return sts, nil
	}
	var answers []struct {
		Status int `json:"status"`
	}
	if err := json.Unmarshal(b, &answers); err != nil || len(answers) != len(entries) {
		return nil, fmt.Errorf("batch answer of %d bytes: not %d answers (%v)", len(b), len(entries), err)
	}
	sts := make([]int, len(entries))
	for j, a := range answers {
		sts[j] = a.Status
	}
	return sts, nil
}

// forClients runs n clients that each call one until d has passed or it
// returns false, and returns what they recorded.
func forClients(n int, d time.Duration, one func(*result) bool) *result {
	r := &result{}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	r.first = time.Now()
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil && one(r) {
			}
		})
	}
	wg.Wait()
	return r
}

// loneWrites sends bodies one at a time, each after the previous answer
// and a random pause of up to 1.5s (so that writes fall at every phase of
// the log's checkpoint interval), and measures each.
func loneWrites(c *http.Client, base []string, mode string, bodies [][]byte) *result {
	r := &result{}
	r.first = time.Now()
	for i, b := range bodies {
		time.Sleep(time.Duration(mrand.Int64N(int64(1500 * time.Millisecond))))
		r.sent.Add(1)
		start := time.Now()
		st, err := post(c, base, mode, i, b)
		r.record(start, st, err)
	}
	return r
}

// distinct returns body with a member "n": i added: a distinct entry of
// about the same size, for a server that checks no signature. (Tessera's
// conformance servers keep an in-memory dedup of the last 256Ki entries,
// so reusing bodies as they are would be answered from memory.)
func distinct(body []byte, i int) []byte {
	b := bytes.TrimSuffix(bytes.TrimSpace(body), []byte("}"))
	return fmt.Appendf(b[:len(b):len(b)], `,"n":%d}`, i)
}

// reads runs n clients that GET random tiles and entry bundles of the tree
// in base's checkpoint for d, and returns the table row.
func reads(c *http.Client, base string, n int, d time.Duration, label string) string {
	resp, err := c.Get(base + "/checkpoint")
	if err != nil {
		fmt.Fprintf(os.Stderr, "docket-load: error: %v\n", err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := strings.SplitN(string(b), "\n", 3)
	size := uint64(0)
	if len(lines) == 3 {
		size, err = strconv.ParseUint(lines[1], 10, 64)
	}
	if resp.StatusCode != 200 || size == 0 || err != nil {
		fmt.Fprintf(os.Stderr, "docket-load: error: %s/checkpoint: %d %q\n", base, resp.StatusCode, b)
		os.Exit(1)
	}
	// The level-0 tiles and the entry bundles of the tree, full and partial.
	var paths []string
	for i := uint64(0); i*layout.EntryBundleWidth < size; i++ {
		w := layout.PartialTileSize(0, i, size)
		paths = append(paths, "/"+layout.TilePath(0, i, w), "/"+layout.EntriesPath(i, w))
	}
	if n <= 0 {
		n = 64
	}
	r := forClients(n, d, func(r *result) bool {
		r.sent.Add(1)
		start := time.Now()
		resp, err := c.Get(base + paths[mrand.IntN(len(paths))])
		st := 0
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			st = resp.StatusCode
		}
		r.record(start, st, err)
		return true
	})
	slices.Sort(r.lat)
	p := r.percentile
	if e := r.firstErr.Load(); e != nil {
		fmt.Fprintf(os.Stderr, "docket-load: %s: first error: %v\n", label, e)
	}
	return fmt.Sprintf("| %s | %d | %d | %d | %d | %.0f | %s | %s | %s | %s |", label, n, r.sent.Load(), r.ok.Load(),
		r.other.Load()+r.busy.Load(), float64(r.ok.Load())/time.Since(r.first).Seconds(), p(0.5), p(0.9), p(0.99), p(1))
}
