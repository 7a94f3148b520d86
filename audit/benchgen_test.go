package audit

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/receipts"
)

var (
	genOut      = flag.String("audit.out", "", "TestGenerateAuditInput writes a log and its presented chains here")
	genReceipts = flag.Int("audit.receipts", 200000, "receipts TestGenerateAuditInput logs and presents")
)

// TestGenerateAuditInput writes the input of the audit benchmark that
// scripts/audit-bench.sh runs, as users run docket audit: with -audit.out
// DIR, a Tessera POSIX log at DIR/log of -audit.receipts receipts of 20
// issuers, in sessions of 60 receipts (a start, 29 gated calls of an allow
// and its execution, an end), each issuer's last an issuer checkpoint;
// its key DIR/log.vkey; the issuers' keys DIR/issuers.jwks; and every
// session chain as DIR/chains/ISSUER-N.jsonl, as docket export writes them.
// Receipts are signed on all cores and streamed to the log and the chain
// files, so the generator's memory does not grow with the log. Without
// -audit.out it does nothing.
func TestGenerateAuditInput(t *testing.T) {
	if *genOut == "" {
		t.Skip("no -audit.out")
	}
	if err := generateAuditInput(t.Context(), *genOut, *genReceipts); err != nil {
		t.Fatal(err)
	}
}

func generateAuditInput(ctx context.Context, out string, n int) error {
	const issuers, perSession = 20, 60
	if err := os.MkdirAll(filepath.Join(out, "chains"), 0o755); err != nil {
		return err
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, "bench.example/audit")
	if err != nil {
		return err
	}
	app, shutdown, reader, err := newAppender(ctx, filepath.Join(out, "log"), skey)
	if err != nil {
		return err
	}
	keys := make([]ed25519.PrivateKey, issuers)
	var jwks []map[string]any
	for i := range keys {
		pub, key, _ := ed25519.GenerateKey(rand.Reader)
		keys[i] = key
		jwks = append(jwks, receipts.JWK(pub))
	}
	b, _ := json.Marshal(map[string]any{"keys": jwks})
	if err := os.WriteFile(filepath.Join(out, "issuers.jwks"), b, 0o644); err != nil {
		return err
	}
	var (
		mu   sync.Mutex
		last tessera.IndexFuture
		errs = make(chan error, issuers)
		wg   sync.WaitGroup
		sem  = make(chan struct{}, runtime.GOMAXPROCS(0))
	)
	for i, key := range keys {
		// Issuer i signs receipts i, i+issuers, ... of the n.
		count := n / issuers
		if i < n%issuers {
			count++
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			pub := key.Public().(ed25519.PublicKey)
			kid := receipts.KID(pub)
			var iseq int64
			sign := func(p receipts.Payload) ([]byte, error) {
				iseq++
				p.IssuerSequence = iseq
				r, err := receipts.Sign(key, p)
				if err != nil {
					return nil, err
				}
				leaf, err := receipts.NewEntry(pub, r)
				if err != nil {
					return nil, err
				}
				f := app.Add(ctx, tessera.NewEntry(leaf))
				mu.Lock()
				last = f
				mu.Unlock()
				return r, nil
			}
			err := func() error {
				for s := 0; count > 0; s++ {
					m := min(count, perSession)
					if count-m == 1 {
						m-- // the last receipt is the issuer checkpoint
					}
					count -= m
					file, err := os.Create(filepath.Join(out, "chains", fmt.Sprintf("%s-%d.jsonl", kid[len(kid)-8:], s)))
					if err != nil {
						return err
					}
					w := bufio.NewWriter(file)
					sess := fmt.Sprintf("session-%d", s)
					var seq int64
					var head string
					for j := range m {
						seq++
						p := receipts.Payload{Type: receipts.TypeDecision, SessionID: sess, Sequence: seq, PreviousReceiptHash: head}
						switch {
						case j == 0:
							p.Type, p.HookEvent, p.LifecycleEvent = receipts.TypeLifecycle, "SessionStart", "session_start"
						case j == m-1:
							p.Type, p.HookEvent, p.LifecycleEvent, p.FinalSequence, p.HeadHash = receipts.TypeLifecycle, "SessionEnd", "session_end", seq, head
						case j%2 == 1:
							p.HookEvent, p.ToolName, p.ToolInputHash, p.Decision, p.Reason = "PreToolUse", "Bash", fmt.Sprintf("sha256:%064x", seq), receipts.Allow, "cedar_allow"
						default:
							p.HookEvent, p.ToolName, p.ToolInputHash, p.Decision, p.DecisionReceiptHash = "PostToolUse", "Bash", fmt.Sprintf("sha256:%064x", seq-1), receipts.Allow, head
						}
						r, err := sign(p)
						if err != nil {
							return err
						}
						head = receipts.ChainHash(r)
						w.Write(r)
						w.WriteByte('\n')
					}
					if err := w.Flush(); err != nil {
						return err
					}
					if err := file.Close(); err != nil {
						return err
					}
					if count == 1 {
						count--
						if _, err := sign(receipts.Payload{Type: receipts.TypeLifecycle, SessionID: "issuer", LifecycleEvent: "issuer_checkpoint", IssuerHighWater: iseq + 1}); err != nil {
							return err
						}
					}
				}
				return nil
			}()
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	awaiter := tessera.NewPublicationAwaiter(ctx, reader.ReadCheckpoint, 100*time.Millisecond)
	if _, _, err := awaiter.Await(ctx, last); err != nil {
		return err
	}
	if err := shutdown(ctx); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "log.vkey"), []byte(vkey+"\n"), 0o644)
}

var (
	benchDir   = flag.String("audit.dir", "", "the directory TestGenerateAuditInput wrote, for BenchmarkFloor, BenchmarkStream and TestServeAuditLog")
	benchServe = flag.String("audit.serve", "", "TestServeAuditLog serves -audit.dir/log at this loopback address until killed")
)

// BenchmarkFloor is the floor of an audit on this machine: one Ed25519
// verification (crypto/ed25519) per receipt, on all cores, for the
// receipts of the log in -audit.dir or 200,000 if it has more (a rate
// does not need 10^6 of them). scripts/audit-bench.sh runs it beside
// docket audit.
func BenchmarkFloor(b *testing.B) {
	if *benchDir == "" {
		b.Skip("no -audit.dir")
	}
	pub, key, _ := ed25519.GenerateKey(rand.Reader)
	msg := make([]byte, 600) // about a receipt's signing input
	sig := ed25519.Sign(key, msg)
	n := min(benchSize(b), 200000)
	cpu := cpuTime()
	for b.Loop() {
		var wg sync.WaitGroup
		workers := runtime.GOMAXPROCS(0)
		for w := range workers {
			wg.Go(func() {
				for i := w; i < n; i += workers {
					if !ed25519.Verify(pub, msg, sig) {
						panic("verify")
					}
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "verifications/s")
	b.ReportMetric(float64(n)*float64(b.N)/(cpuTime()-cpu).Seconds(), "verifications/cpu-s")
}

// cpuTime is the CPU time (user and system) the process has used: on a
// machine others share, rates per CPU second are what compare.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStream is Tessera's client merely streaming the bundles of the
// log in -audit.dir, from the directory and, with -audit.url, over HTTP.
func BenchmarkStream(b *testing.B) {
	if *benchDir == "" {
		b.Skip("no -audit.dir")
	}
	n := uint64(benchSize(b))
	fetchers := map[string]client.EntryBundleFetcherFunc{"local": client.FileFetcher{Root: filepath.Join(*benchDir, "log")}.ReadEntryBundle}
	if *benchURL != "" {
		u, _ := url.Parse(*benchURL + "/")
		hf, err := client.NewHTTPFetcher(u, nil)
		if err != nil {
			b.Fatal(err)
		}
		fetchers["http"] = hf.ReadEntryBundle
	}
	for name, f := range fetchers {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				sizeFn := func(context.Context) (uint64, error) { return n, nil }
				var got uint64
				for bundle, err := range client.EntryBundles(b.Context(), uint(2*runtime.GOMAXPROCS(0)+2), sizeFn, f, 0, n) {
					if err != nil {
						b.Fatal(err)
					}
					var eb api.EntryBundle
					if err := eb.UnmarshalText(bundle.Data); err != nil {
						b.Fatal(err)
					}
					got += uint64(bundle.RangeInfo.N)
				}
				if got != n {
					b.Fatalf("streamed %d entries, want %d", got, n)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

var benchURL = flag.String("audit.url", "", "the URL BenchmarkStream also reads -audit.dir's log from")

// benchSize is the size of the log in -audit.dir.
func benchSize(b *testing.B) int {
	raw, err := os.ReadFile(filepath.Join(*benchDir, "log", "checkpoint"))
	if err != nil {
		b.Fatal(err)
	}
	lines := strings.SplitN(string(raw), "\n", 3)
	n, err := strconv.Atoi(lines[1])
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// TestServeAuditLog serves the log in -audit.dir over loopback HTTP at
// -audit.serve until it is killed, as a static tlog-tiles host would, for
// docket audit -log http://… in scripts/audit-bench.sh.
func TestServeAuditLog(t *testing.T) {
	if *benchServe == "" {
		t.Skip("no -audit.serve")
	}
	t.Fatal(http.ListenAndServe(*benchServe, http.FileServer(http.Dir(filepath.Join(*benchDir, "log")))))
}
