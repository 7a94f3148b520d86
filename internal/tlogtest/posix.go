package tlogtest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"testing"
	"time"

	"github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/tessera"
	"github.com/transparency-dev/tessera/client"
	"github.com/transparency-dev/tessera/storage/posix"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/receipts"
)

// A POSIXLog is a real Tessera POSIX log in a directory, for tests that read
// a log back through the tlog-tiles layout (the auditor, the monitor, the
// explorer). Tests read it with client.FileFetcher{Root: Dir} or serve Dir
// over HTTP.
type POSIXLog struct {
	Dir      string
	Verifier note.Verifier
	Signer   note.Signer
	app      *tessera.Appender
	awaiter  *tessera.PublicationAwaiter
}

// A KeyPair is a note key pair for a test log.
type KeyPair struct{ SKey, VKey string }

// NewKeyPair returns a fresh Ed25519 note key pair named origin.
func NewKeyPair(t testing.TB, origin string) KeyPair {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	return KeyPair{skey, vkey}
}

// NewPOSIX starts a Tessera POSIX log in dir signing with k, stopped at the
// end of the test.
func NewPOSIX(t testing.TB, dir string, k KeyPair) *POSIXLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	signer, err := note.NewSigner(k.SKey)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := note.NewVerifier(k.VKey)
	if err != nil {
		t.Fatal(err)
	}
	driver, err := posix.New(ctx, posix.Config{Path: dir})
	if err != nil {
		t.Fatal(err)
	}
	app, shutdown, reader, err := tessera.NewAppender(ctx, driver, tessera.NewAppendOptions().
		WithCheckpointSigner(signer).
		WithCheckpointInterval(100*time.Millisecond).
		WithBatching(256, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = shutdown(context.Background())
		cancel()
	})
	return &POSIXLog{Dir: dir, app: app, awaiter: tessera.NewPublicationAwaiter(ctx, reader.ReadCheckpoint, 10*time.Millisecond), Verifier: verifier, Signer: signer}
}

// Add appends leaves and waits until a published checkpoint covers them.
func (l *POSIXLog) Add(t testing.TB, leaves ...[]byte) {
	t.Helper()
	ctx := context.Background()
	futures := make([]tessera.IndexFuture, len(leaves))
	for i, leaf := range leaves {
		futures[i] = l.app.Add(ctx, tessera.NewEntry(leaf))
	}
	for _, f := range futures {
		if _, _, err := l.awaiter.Await(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
}

// Checkpoint returns the published checkpoint, verified.
func (l *POSIXLog) Checkpoint(t testing.TB) ([]byte, *log.Checkpoint) {
	t.Helper()
	raw, err := client.FileFetcher{Root: l.Dir}.ReadCheckpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cp, _, _, err := log.ParseCheckpoint(raw, l.Verifier.Name(), l.Verifier)
	if err != nil {
		t.Fatal(err)
	}
	return raw, cp
}

// Sign returns a checkpoint note of size n and root, signed by the log key.
func (l *POSIXLog) Sign(t testing.TB, n uint64, root []byte) []byte {
	t.Helper()
	body := log.Checkpoint{Origin: l.Verifier.Name(), Size: n, Hash: root}.Marshal()
	b, err := note.Sign(&note.Note{Text: string(body)}, l.Signer)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An Issuer signs chained receipts the way the store does, with an
// issuer-wide sequence, keeping each session's chain.
type Issuer struct {
	t   testing.TB
	Key ed25519.PrivateKey
	Pub ed25519.PublicKey
	KID string
	// Seq is the last issuer_sequence allocated.
	Seq      int64
	Sessions map[string]*Session
}

// A Session is one session chain of an Issuer.
type Session struct {
	Seq  int64
	Head string
	All  [][]byte
}

// NewIssuer returns an issuer with a fresh key.
func NewIssuer(t testing.TB) *Issuer {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &Issuer{t: t, Key: key, Pub: pub, KID: receipts.KID(pub), Sessions: map[string]*Session{}}
}

// Sign signs p as the next receipt of session sess.
func (is *Issuer) Sign(sess string, p receipts.Payload) []byte {
	is.t.Helper()
	s := is.Sessions[sess]
	if s == nil {
		s = &Session{}
		is.Sessions[sess] = s
	}
	s.Seq++
	is.Seq++
	p.SessionID, p.Sequence, p.PreviousReceiptHash, p.IssuerSequence = sess, s.Seq, s.Head, is.Seq
	r, err := receipts.Sign(is.Key, p)
	if err != nil {
		is.t.Fatal(err)
	}
	s.Head = receipts.ChainHash(r)
	s.All = append(s.All, r)
	return r
}

// Call signs a gated call: an allow decision and its execution.
func (is *Issuer) Call(sess, tool string) (decision, execution []byte) {
	in := "sha256:" + tool
	decision = is.Sign(sess, receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: tool, ToolInputHash: in, Decision: receipts.Allow, Reason: "cedar_allow"})
	execution = is.Sign(sess, receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PostToolUse", ToolName: tool, ToolInputHash: in, Decision: receipts.Allow, DecisionReceiptHash: receipts.ChainHash(decision)})
	return decision, execution
}

// Start signs a session_start receipt.
func (is *Issuer) Start(sess string) []byte {
	return is.Sign(sess, receipts.Payload{Type: receipts.TypeLifecycle, HookEvent: "SessionStart", LifecycleEvent: "session_start"})
}

// End signs a session_end receipt carrying the final sequence and head.
func (is *Issuer) End(sess string) []byte {
	s := is.Sessions[sess]
	return is.Sign(sess, receipts.Payload{Type: receipts.TypeLifecycle, HookEvent: "SessionEnd", LifecycleEvent: "session_end", FinalSequence: s.Seq + 1, HeadHash: s.Head})
}

// Checkpoint signs an issuer checkpoint at the current high-water mark.
func (is *Issuer) Checkpoint(open ...string) []byte {
	is.t.Helper()
	is.Seq++
	r, err := receipts.Sign(is.Key, receipts.Payload{Type: receipts.TypeLifecycle, SessionID: "issuer", LifecycleEvent: "issuer_checkpoint",
		IssuerSequence: is.Seq, IssuerHighWater: is.Seq, OpenSessions: open})
	if err != nil {
		is.t.Fatal(err)
	}
	return r
}

// Leaf returns the log entry of a receipt of this issuer.
func (is *Issuer) Leaf(r []byte) []byte {
	is.t.Helper()
	leaf, err := receipts.NewEntry(is.Pub, r)
	if err != nil {
		is.t.Fatal(err)
	}
	return leaf
}

// Leaves returns the log entries of receipts of this issuer.
func (is *Issuer) Leaves(rs ...[]byte) [][]byte {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		out[i] = is.Leaf(r)
	}
	return out
}

// Keys returns a key set pinning the issuer's key.
func (is *Issuer) Keys() *receipts.KeySet { return receipts.PinnedKey(is.Pub) }
