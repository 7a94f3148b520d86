package store

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/docketlog/docket/receipts"
)

func testKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	priv, _ := receipts.GenerateKey()
	return priv
}

// appendDecision appends one signed decision receipt to a session.
func appendDecision(t testing.TB, s *Store, key ed25519.PrivateKey, session, decision string, opts AppendOptions) Head {
	t.Helper()
	h, err := s.Append(session, opts, func(l Link) ([]byte, error) {
		p := receipts.Payload{
			Type: receipts.TypeDecision, SessionID: session, Sequence: l.Sequence,
			PreviousReceiptHash: l.Previous, HookEvent: "PreToolUse", ToolName: "Bash",
			Decision: decision, Reason: "cedar_allow",
		}
		if l.Decision != nil {
			p.HookEvent, p.Decision, p.DecisionReceiptHash = "PostToolUse", l.Decision.Decision, l.Decision.Hash
		}
		return receipts.Sign(key, p)
	})
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return h
}

func verifyAll(t *testing.T, s *Store, key ed25519.PrivateKey, session string, want int) {
	t.Helper()
	lines, err := s.Receipts(session)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != want {
		t.Fatalf("Receipts(%q) has %d receipts, want %d", session, len(lines), want)
	}
	for i, r := range receipts.VerifyChain(lines, receipts.Options{Keys: receipts.PinnedKey(key.Public().(ed25519.PublicKey))}) {
		if r.Outcome != receipts.Valid {
			t.Fatalf("VerifyChain: receipt %d = %v (%s: %s), want valid", i+1, r.Outcome, r.Cause, r.Detail)
		}
	}
}

func TestAppendChain(t *testing.T) {
	s := Open(t.TempDir())
	key := testKey(t)
	for i := range 5 {
		h := appendDecision(t, s, key, "s1", receipts.Allow, AppendOptions{})
		if h.Sequence != int64(i+1) {
			t.Fatalf("Append %d: sequence = %d, want %d", i, h.Sequence, i+1)
		}
	}
	verifyAll(t, s, key, "s1", 5)
	sessions, err := s.Sessions()
	if err != nil || len(sessions) != 1 || sessions[0] != "s1" {
		t.Fatalf("Sessions() = %v, %v, want [s1]", sessions, err)
	}
}

func TestHeadRecovery(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(t *testing.T, s *Store)
	}{
		{"lost", func(t *testing.T, s *Store) { os.Remove(s.headPath("s")) }},
		{"torn", func(t *testing.T, s *Store) { os.WriteFile(s.headPath("s"), []byte(`{"seq`), 0o600) }},
		{"stale", func(t *testing.T, s *Store) {
			os.WriteFile(s.headPath("s"), []byte(`{"sequence":1,"hash":"sha256:00","size":10}`), 0o600)
		}},
		{"partial last line", func(t *testing.T, s *Store) {
			f, _ := os.OpenFile(s.ChainPath("s"), os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString(`{"payload":{"sequ`)
			f.Close()
			os.Remove(s.headPath("s"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Open(t.TempDir())
			key := testKey(t)
			appendDecision(t, s, key, "s", receipts.Allow, AppendOptions{})
			appendDecision(t, s, key, "s", receipts.Deny, AppendOptions{})
			tt.break_(t, s)
			h := appendDecision(t, s, key, "s", receipts.Allow, AppendOptions{})
			if h.Sequence != 3 {
				t.Fatalf("Append after %s head: sequence = %d, want 3", tt.name, h.Sequence)
			}
			verifyAll(t, s, key, "s", 3)
		})
	}
}

func TestExecutionLink(t *testing.T) {
	for _, lostHead := range []bool{false, true} {
		t.Run(fmt.Sprintf("lostHead=%v", lostHead), func(t *testing.T) {
			s := Open(t.TempDir())
			key := testKey(t)
			call := CallKey("s", "Bash", "")
			appendDecision(t, s, key, "s", receipts.Allow, AppendOptions{})
			appendDecision(t, s, key, "s", receipts.Deny, AppendOptions{})
			if lostHead {
				os.Remove(s.headPath("s"))
			}
			var got *Pending
			_, err := s.Append("s", AppendOptions{Executes: call}, func(l Link) ([]byte, error) {
				got = l.Decision
				if got == nil {
					return nil, fmt.Errorf("no decision found")
				}
				return receipts.Sign(key, receipts.Payload{Type: receipts.TypeDecision, SessionID: "s", Sequence: l.Sequence, PreviousReceiptHash: l.Previous, HookEvent: "PostToolUse", ToolName: "Bash", Decision: l.Decision.Decision, DecisionReceiptHash: l.Decision.Hash})
			})
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || got.Decision != receipts.Allow {
				t.Fatalf("Append(Executes: call) decision = %+v, want the allow", got)
			}
			verifyAll(t, s, key, "s", 3)
		})
	}
}

func TestParallelAppend(t *testing.T) {
	s := Open(t.TempDir())
	key := testKey(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				appendDecision(t, s, key, "p", receipts.Allow, AppendOptions{})
			}
		})
	}
	wg.Wait()
	verifyAll(t, s, key, "p", 80)
}

func TestSessionName(t *testing.T) {
	tests := []struct {
		name, id string
		same     bool
	}{
		{"uuid", "0b4e7c2a-5f3e-4c1d-9a8b-1234567890ab", true},
		{"traversal", "../../etc/passwd", false},
		{"slash", "a/b", false},
		{"dot", ".hidden", false},
		{"empty", "", false},
		{"unicode", "séance", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := SessionName(tt.id)
			if (got == tt.id) != tt.same || !safeName(got) {
				t.Fatalf("SessionName(%q) = %q, want a safe name (same: %v)", tt.id, got, tt.same)
			}
			if again := SessionName(got); again != got {
				t.Fatalf("SessionName(%q) = %q, want it unchanged", got, again)
			}
			if filepath.Base(got) != got {
				t.Fatalf("SessionName(%q) = %q has a directory", tt.id, got)
			}
		})
	}
	if SessionName("a/b") == SessionName("a_b") {
		t.Fatalf("SessionName(a/b) = SessionName(a_b), want distinct names")
	}
}

func TestConfig(t *testing.T) {
	const vkey = "example.com/log+8dece4fb+AU5+/t4yWPy1IXA9W9WZ0//nHychghnBlya4ZBwn0Wnz"
	tests := []struct {
		name string
		c    Config
		ok   bool
	}{
		{"empty", Config{}, true},
		{"log", Config{LogURL: "https://log.example/", LogKey: vkey}, true},
		{"no key", Config{LogURL: "https://log.example/"}, false},
		{"bad url", Config{LogURL: "ftp://x", LogKey: vkey}, false},
		{"bad key", Config{LogURL: "https://log.example/", LogKey: "nope"}, false},
		{"witness without log", Config{WitnessPolicy: "w.policy"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate(%+v) = %v, want ok %v", tt.c, err, tt.ok)
			}
			if !tt.ok {
				return
			}
			s := Open(t.TempDir())
			if err := s.WriteConfig(tt.c); err != nil {
				t.Fatal(err)
			}
			got, err := s.LoadConfig()
			if err != nil || got != tt.c {
				t.Fatalf("LoadConfig() = %+v, %v, want %+v", got, err, tt.c)
			}
		})
	}
}

func TestExecutionLinkScan(t *testing.T) {
	s := Open(t.TempDir())
	key := testKey(t)
	call := CallKey("s", "Bash", "")
	first := appendDecision(t, s, key, "s", receipts.Allow, AppendOptions{})
	second := appendDecision(t, s, key, "s", receipts.Allow, AppendOptions{})
	// Push the decisions out of the tail window: the whole chain is read.
	for range 150 {
		appendDecision(t, s, key, "s", receipts.Deny, AppendOptions{})
	}
	for _, want := range []Head{second, first} {
		var got *Pending
		if _, err := s.Append("s", AppendOptions{Executes: call}, func(l Link) ([]byte, error) {
			if got = l.Decision; got == nil {
				return nil, fmt.Errorf("no decision found")
			}
			return receipts.Sign(key, receipts.Payload{Type: receipts.TypeDecision, SessionID: "s", Sequence: l.Sequence, PreviousReceiptHash: l.Previous, HookEvent: "PostToolUse", ToolName: "Bash", Decision: got.Decision, DecisionReceiptHash: got.Hash})
		}); err != nil {
			t.Fatal(err)
		}
		if got.Hash != want.Hash {
			t.Fatalf("Append(Executes) linked %s, want the latest unexecuted decision %s", got.Hash, want.Hash)
		}
	}
	if _, err := s.Append("s", AppendOptions{Executes: call}, func(l Link) ([]byte, error) {
		if l.Decision != nil {
			t.Fatalf("Append(Executes) found %+v, want no decision left", l.Decision)
		}
		return receipts.Sign(key, receipts.Payload{Type: receipts.TypeDecision, SessionID: "s", Sequence: l.Sequence, PreviousReceiptHash: l.Previous, HookEvent: "PostToolUse", ToolName: "Bash"})
	}); err != nil {
		t.Fatal(err)
	}
	// The chain itself is intact, and its verification names the execution
	// that no decision gated.
	lines, err := s.Receipts("s")
	if err != nil || len(lines) != 155 {
		t.Fatalf("Receipts = %d, %v; want 155", len(lines), err)
	}
	results := receipts.VerifyChain(lines, receipts.Options{Keys: receipts.PinnedKey(key.Public().(ed25519.PublicKey))})
	for i, r := range results[:154] {
		if r.Outcome != receipts.Valid {
			t.Fatalf("VerifyChain: receipt %d = %v (%s), want valid", i+1, r.Outcome, r.Cause)
		}
	}
	if r := results[154]; r.Outcome != receipts.Invalid || r.Cause != receipts.CauseUnlinkedExec {
		t.Errorf("VerifyChain: receipt 155 = %v %s, want invalid unlinked_execution", r.Outcome, r.Cause)
	}
}

func TestProofFiles(t *testing.T) {
	s := Open(t.TempDir())
	if got := legacyProofPath(s, "s", 7); filepath.Base(got) != "7.tlog-proof" {
		t.Errorf("ProofPath = %s, want .../7.tlog-proof", got)
	}
	if _, err := s.ReadProof("s", 7); !errors.Is(err, fs.ErrNotExist) || hasProof(s, "s", 7) {
		t.Fatalf("ReadProof with no proof: %v, want ErrNotExist", err)
	}
	// A proof stored by an earlier docket, as .proof, is read.
	writeProof := func(ext, data string) {
		if err := os.MkdirAll(s.legacyProofDir("s"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.legacyProofDir("s"), "7"+ext), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeProof(".proof", "old")
	if got, err := s.ReadProof("s", 7); err != nil || string(got) != "old" || !hasProof(s, "s", 7) {
		t.Fatalf("ReadProof of a .proof = %q, %v; want it read", got, err)
	}
	writeProof(".tlog-proof", "new")
	if got, err := s.ReadProof("s", 7); err != nil || string(got) != "new" {
		t.Fatalf("ReadProof with both files = %q, %v; want the .tlog-proof", got, err)
	}
}

// legacyProofPath is where earlier versions stored a receipt's proof.
func legacyProofPath(s *Store, session string, sequence int64) string {
	return filepath.Join(s.legacyProofDir(session), fmt.Sprint(sequence)+ProofExt)
}

// hasProof reports whether a proof of the receipt is stored, in any form.
func hasProof(s *Store, session string, sequence int64) bool {
	set, err := s.Proofs(session)
	if err != nil {
		return false
	}
	_, ok := set.Get(sequence)
	return ok
}
