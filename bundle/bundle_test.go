package bundle_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/docketlog/docket/bundle"
	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// project is a store with two sessions (s1: 3 receipts, s2: 2), every
// receipt in the test log l with its proof stored, a log configured with a
// witness policy, and the default-named policy file.
func project(t *testing.T) (*store.Store, *tlogtest.Log) {
	t.Helper()
	st := store.Open(t.TempDir())
	key, kf := receipts.GenerateKey()
	if err := st.WriteKey(kf); err != nil {
		t.Fatal(err)
	}
	l := tlogtest.New("example.com/log")
	var proofs []store.Proof
	type ref struct {
		session string
		seq     int64
		index   uint64
	}
	var refs []ref
	for _, s := range []struct {
		id string
		n  int
	}{{"s1", 3}, {"s2", 2}} {
		for range s.n {
			var rec []byte
			h, err := st.Append(s.id, store.AppendOptions{}, func(lk store.Link) ([]byte, error) {
				var err error
				rec, err = receipts.Sign(key, receipts.Payload{Type: receipts.TypeDecision, SessionID: s.id, Sequence: lk.Sequence,
					PreviousReceiptHash: lk.Previous, IssuerSequence: lk.IssuerSequence, HookEvent: "PreToolUse", ToolName: "Bash", Decision: receipts.Allow})
				return rec, err
			})
			if err != nil {
				t.Fatal(err)
			}
			leaf, err := receipts.NewEntry(key.Public().(ed25519.PublicKey), rec)
			if err != nil {
				t.Fatal(err)
			}
			refs = append(refs, ref{s.id, h.Sequence, l.Tree.Size()})
			l.Tree.AppendData(leaf)
		}
	}
	for _, r := range refs {
		proofs = append(proofs, store.Proof{Session: r.session, Sequence: r.seq, Text: l.Proof(r.index)})
	}
	if err := st.PutProofs(proofs); err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(st.Project(), "witnesses.policy")
	if err := os.WriteFile(policy, []byte("log "+l.VKey+" http://127.0.0.1:1\nquorum none\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteConfig(store.Config{LogURL: "http://127.0.0.1:1", LogKey: l.VKey, WitnessPolicy: "witnesses.policy"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WritePolicyFile("docket.cedar", []byte("@id(\"all\") permit (principal, action, resource);\n")); err != nil {
		t.Fatal(err)
	}
	return st, l
}

// TestWriteOpen: what Write puts in a bundle, Open and the store's
// operations read back: the manifest names the log and the files, every
// chain is byte for byte the store's, and every proof is there as its own
// .tlog-proof file and verifies against the log key.
func TestWriteOpen(t *testing.T) {
	st, l := project(t)
	dir := filepath.Join(t.TempDir(), "bundle")
	n, err := bundle.Write(st, dir, nil)
	if err != nil || n != 2 {
		t.Fatalf("Write = %d, %v, want 2 sessions", n, err)
	}
	b, err := bundle.Open(t.Context(), dir)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	if b.LogKey != l.VKey || b.LogURL != "http://127.0.0.1:1" {
		t.Errorf("Open(bundle).Manifest = %+v, want the store's log", b.Manifest)
	}
	for _, f := range []string{b.WitnessPolicyFile(), b.JWKSFile(), filepath.Join(dir, "policy", "docket.cedar")} {
		if _, err := os.Stat(f); f == "" || err != nil {
			t.Errorf("bundle file %q: %v", f, err)
		}
	}
	keys, err := receipts.LoadKeySet(b.JWKSFile())
	if err != nil {
		t.Fatalf("LoadKeySet(bundle JWKS) = %v", err)
	}
	files, err := b.ChainFiles()
	if err != nil || len(files) != 2 {
		t.Fatalf("ChainFiles() = %v, %v, want 2", files, err)
	}
	v, err := c2sp.LoadProofVerifier(b.LogKey, b.WitnessPolicyFile())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"s1", "s2"} {
		want, _ := st.Receipts(name)
		got, err := b.Store().Receipts(name)
		if err != nil || !slices.EqualFunc(got, want, bytes.Equal) {
			t.Errorf("bundle Receipts(%s) = %d receipts, %v, want the store's %d", name, len(got), err, len(want))
		}
		ps, err := b.Store().Proofs(name)
		if err != nil || ps.Len() != len(want) {
			t.Fatalf("bundle Proofs(%s) = %v, %v, want %d", name, ps, err, len(want))
		}
		for i, rec := range want {
			seq := int64(i + 1)
			file := filepath.Join(dir, store.ProofsDir, name, []string{"1", "2", "3"}[i]+store.ProofExt)
			if _, err := os.Stat(file); err != nil {
				t.Errorf("proof file of %s/%d: %v", name, seq, err)
			}
			p, _ := ps.Get(seq)
			r := receipts.Verify(rec, receipts.Options{Keys: keys})
			if idx := v.CheckReceipt(&r, rec, p); idx < 0 {
				t.Errorf("CheckReceipt(%s/%d) = %d (%s: %s), want its index", name, seq, idx, r.Cause, r.Detail)
			}
		}
	}

	// One session only, by its id.
	n, err = bundle.Write(st, filepath.Join(t.TempDir(), "one"), []string{"s2"})
	if err != nil || n != 1 {
		t.Errorf("Write(-session s2) = %d, %v, want 1", n, err)
	}
	// Never over an existing directory.
	if _, err := bundle.Write(st, dir, nil); err == nil {
		t.Errorf("Write over an existing bundle = nil error, want one")
	}
}

// TestOpenRefuses: a directory that is no bundle is ErrNotBundle; a
// manifest the party being audited planted is read strictly, bounded and
// never blocking, and may not name files outside the bundle.
func TestOpenRefuses(t *testing.T) {
	file := filepath.Join(t.TempDir(), "chain.jsonl")
	os.WriteFile(file, []byte("{}\n"), 0o644)
	tests := []struct {
		name     string
		dir      func(t *testing.T) string
		notFound bool
	}{
		{"empty directory", func(t *testing.T) string { return t.TempDir() }, true},
		{"a file", func(t *testing.T) string { return file }, true},
		{"missing path", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, true},
		{"unknown member", manifest(`{"log_url":"http://x","extra":1}`), false},
		{"member folded like another", manifest(`{"Log_URL":"http://x"}`), false},
		{"duplicate member", manifest(`{"log_key":"a","log_key":"b"}`), false},
		{"jwks outside the bundle", manifest(`{"jwks":"../../etc/passwd"}`), false},
		{"absolute witness policy", manifest(`{"witness_policy":"/etc/passwd"}`), false},
		{"not JSON", manifest(`log_url: x`), false},
		{"manifest is a FIFO", func(t *testing.T) string {
			dir := t.TempDir()
			if err := syscall.Mkfifo(filepath.Join(dir, bundle.ManifestFile), 0o644); err != nil {
				t.Skip(err)
			}
			return dir
		}, false},
		{"manifest is a directory", func(t *testing.T) string {
			dir := t.TempDir()
			os.Mkdir(filepath.Join(dir, bundle.ManifestFile), 0o755)
			return dir
		}, false},
		{"manifest too large", manifest(`{"log_url":"` + string(bytes.Repeat([]byte("a"), 70<<10)) + `"}`), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := bundle.Open(t.Context(), tt.dir(t))
			if err == nil || errors.Is(err, bundle.ErrNotBundle) != tt.notFound {
				t.Errorf("Open = %+v, %v, want an error (ErrNotBundle: %v)", b, err, tt.notFound)
			}
		})
	}
}

func manifest(m string) func(t *testing.T) string {
	return func(t *testing.T) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, bundle.ManifestFile), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
}

// FuzzOpen: any manifest is refused or read into files inside the bundle.
func FuzzOpen(f *testing.F) {
	f.Add([]byte(`{"log_url":"https://log.example","log_key":"k","witness_policy":"witnesses.policy","jwks":"issuers.jwks"}`))
	f.Add([]byte(`{"jwks":"a/../../b"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, m []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, bundle.ManifestFile), m, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := bundle.Open(t.Context(), dir)
		if err != nil {
			return
		}
		for _, p := range []string{b.WitnessPolicyFile(), b.JWKSFile()} {
			if r, err := filepath.Rel(dir, p); p != "" && (err != nil || !filepath.IsLocal(r)) {
				t.Errorf("Open(%q) names %q, outside the bundle", m, p)
			}
		}
	})
}
