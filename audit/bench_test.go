package audit

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/api"
	"github.com/transparency-dev/tessera/client"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/receipts"
)

var (
	benchN    = flag.Int("audit.n", 20000, "entries in the log BenchmarkAudit reads (generated once into the temp directory)")
	benchJunk = flag.Int("audit.junk", 4, "full bundles of the largest legal junk entries in the log BenchmarkAuditJunk reads")
)

// benchLog returns the directory of a Tessera POSIX log of n Docket entries
// (100 issuers, 10 sessions each, chained), generating it on first use, and
// its log key.
func benchLog(b *testing.B, n int) (string, note.Verifier) {
	return cachedLog(b, fmt.Sprintf("docket-audit-bench-%d", n), "bench.example/audit", func(dir, skey string) error {
		return generateLog(b.Context(), dir, skey, n)
	})
}

// cachedLog returns the log directory under the temp directory's name, and
// its log key, first generating the log with gen under a new key of origin.
func cachedLog(b *testing.B, name, origin string, gen func(dir, skey string) error) (string, note.Verifier) {
	b.Helper()
	dir := filepath.Join(os.TempDir(), name)
	keyFile := filepath.Join(dir, "log.vkey")
	if vkey, err := os.ReadFile(keyFile); err == nil {
		v, err := note.NewVerifier(string(vkey))
		if err != nil {
			b.Fatal(err)
		}
		return filepath.Join(dir, "log"), v
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("generating %s", dir)
	if err := gen(filepath.Join(dir, "log"), skey); err != nil {
		b.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "log.skey"), []byte(skey), 0o600)
	if err := os.WriteFile(keyFile, []byte(vkey), 0o644); err != nil {
		b.Fatal(err)
	}
	v, _ := note.NewVerifier(vkey)
	return filepath.Join(dir, "log"), v
}

// generateLog writes n signed, chained receipts of 100 issuers to a new
// Tessera POSIX log at dir, signing on all cores.
func generateLog(ctx context.Context, dir, skey string, n int) error {
	const issuers = 100
	type iss struct {
		key   ed25519.PrivateKey
		pub   ed25519.PublicKey
		seq   int64
		heads [10]string
		sseq  [10]int64
	}
	all := make([]*iss, issuers)
	for i := range all {
		pub, key, _ := ed25519.GenerateKey(rand.Reader)
		all[i] = &iss{key: key, pub: pub}
	}
	// Leaves are signed in order per issuer, issuers in parallel.
	leaves := make([][]byte, n)
	var wg sync.WaitGroup
	for w := range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < issuers; i += runtime.GOMAXPROCS(0) {
				is := all[i]
				for j := i; j < n; j += issuers {
					s := (j / issuers) % 10
					is.seq++
					is.sseq[s]++
					p := receipts.Payload{Type: receipts.TypeDecision, SessionID: fmt.Sprintf("session-%d", s), Sequence: is.sseq[s],
						PreviousReceiptHash: is.heads[s], HookEvent: "PreToolUse", Agent: "claude-code", ToolName: "Bash",
						ToolInputHash: fmt.Sprintf("sha256:%064x", j), Decision: receipts.Deny, Reason: "cedar_deny",
						PolicyDigest: "sha256:" + fmt.Sprintf("%064x", 1), PolicyIDs: []string{"deny-rm-rf"}, IssuerSequence: is.seq}
					r, err := receipts.Sign(is.key, p)
					if err != nil {
						panic(err)
					}
					is.heads[s] = receipts.ChainHash(r)
					leaf, err := receipts.NewEntry(is.pub, r)
					if err != nil {
						panic(err)
					}
					leaves[j] = leaf
				}
			}
		}()
	}
	wg.Wait()
	return writeLog(ctx, dir, skey, leaves)
}

// writeLog appends leaves to a new Tessera POSIX log at dir, signed with
// skey, and returns once a published checkpoint covers them all.
func writeLog(ctx context.Context, dir, skey string, leaves [][]byte) error {
	app, shutdown, reader, err := newAppender(ctx, dir, skey)
	if err != nil {
		return err
	}
	n := len(leaves)
	futures := make([]tessera.IndexFuture, n)
	for i, leaf := range leaves {
		futures[i] = app.Add(ctx, tessera.NewEntry(leaf))
	}
	awaiter := tessera.NewPublicationAwaiter(ctx, reader.ReadCheckpoint, 100*time.Millisecond)
	if _, _, err := awaiter.Await(ctx, futures[n-1]); err != nil {
		return err
	}
	return shutdown(ctx)
}

// newAppender returns a Tessera appender of a new POSIX log at dir, signed
// with skey, batching as a busy log does.
func newAppender(ctx context.Context, dir, skey string) (*tessera.Appender, func(context.Context) error, tessera.LogReader, error) {
	signer, err := note.NewSigner(skey)
	if err != nil {
		return nil, nil, nil, err
	}
	driver, err := posix.New(ctx, posix.Config{Path: dir})
	if err != nil {
		return nil, nil, nil, err
	}
	return tessera.NewAppender(ctx, driver, tessera.NewAppendOptions().
		WithCheckpointSigner(signer).WithCheckpointInterval(time.Second).WithBatching(4096, 100*time.Millisecond).
		WithPushback(1<<20))
}

// BenchmarkAudit reads a whole log with every signature checked and its
// root recomputed, from the storage directory and over loopback HTTP, next
// to Tessera's own client merely streaming the same bundles. Run with
// -audit.n=1000000 for the README's figure.
func BenchmarkAudit(b *testing.B) {
	// As docket audit runs (internal/cli/docketcmd/audit.go), unless GOGC is set.
	if os.Getenv("GOGC") == "" {
		defer debug.SetGCPercent(debug.SetGCPercent(400))
	}
	dir, v := benchLog(b, *benchN)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	b.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL + "/")
	hf, err := client.NewHTTPFetcher(u, srv.Client())
	if err != nil {
		b.Fatal(err)
	}
	for _, src := range []struct {
		name string
		f    Fetcher
	}{{"local", client.FileFetcher{Root: dir}}, {"http", hf}} {
		raw, err := src.f.ReadCheckpoint(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		cp, _, _, err := log.ParseCheckpoint(raw, v.Name(), v)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("scan-"+src.name, func(b *testing.B) {
			for b.Loop() {
				findings, err := Run(b.Context(), Config{Fetcher: src.f, Checkpoint: raw, Size: cp.Size, Root: cp.Hash}, nil)
				if err != nil {
					b.Fatal(err)
				}
				if len(findings) != MaxPerKind+1 { // every session is open: 1,000 notices
					b.Fatalf("%d findings", len(findings))
				}
			}
			b.ReportMetric(float64(cp.Size)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
		b.Run("tessera-stream-"+src.name, func(b *testing.B) {
			for b.Loop() {
				sizeFn := func(context.Context) (uint64, error) { return cp.Size, nil }
				var n uint64
				for bundle, err := range client.EntryBundles(b.Context(), uint(2*runtime.GOMAXPROCS(0)+2), sizeFn, src.f.ReadEntryBundle, 0, cp.Size) {
					if err != nil {
						b.Fatal(err)
					}
					var eb api.EntryBundle
					if err := eb.UnmarshalText(bundle.Data); err != nil {
						b.Fatal(err)
					}
					n += uint64(bundle.RangeInfo.N)
				}
				if n != cp.Size {
					b.Fatalf("streamed %d entries, want %d", n, cp.Size)
				}
			}
			b.ReportMetric(float64(cp.Size)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
		})
	}
}

// junkLog returns the directory of a Tessera POSIX log of bundles full
// bundles, each of 256 entries of 65,535 random bytes, the largest a log may
// serve (a log that accepts anything could hold it), generating it on first
// use, and its log key.
func junkLog(b *testing.B, bundles int) (string, note.Verifier) {
	return cachedLog(b, fmt.Sprintf("docket-audit-junk-%d", bundles), "bench.example/junk", func(dir, skey string) error {
		leaves := make([][]byte, 256*bundles)
		for i := range leaves {
			leaves[i] = make([]byte, MaxLeafSize)
			rand.Read(leaves[i])
		}
		return writeLog(b.Context(), dir, skey, leaves)
	})
}

// BenchmarkAuditJunk audits a log of full bundles of the largest junk
// entries (-audit.junk bundles): every entry a bad entry, at most MaxPerKind
// of them listed with evidence. docs/audit.md measures docket audit's peak
// RSS on the same log.
func BenchmarkAuditJunk(b *testing.B) {
	dir, v := junkLog(b, *benchJunk)
	f := FileFetcher{Root: dir}
	raw, err := f.ReadCheckpoint(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	cp, _, _, err := log.ParseCheckpoint(raw, v.Name(), v)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		findings, err := Run(b.Context(), Config{Fetcher: f, Checkpoint: raw, Size: cp.Size, Root: cp.Hash, EvidenceDir: b.TempDir()}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(findings) != MaxPerKind+1 {
			b.Fatalf("%d findings, want %d and a summary", len(findings), MaxPerKind)
		}
	}
	b.ReportMetric(float64(cp.Size)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
