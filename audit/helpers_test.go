package audit

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

// testLog is a real Tessera POSIX log in a temporary directory.
type testLog struct {
	dir      string
	app      *tessera.Appender
	awaiter  *tessera.PublicationAwaiter
	verifier note.Verifier
	signer   note.Signer
}

// logKey is a note key pair for a test log.
type logKey struct{ skey, vkey string }

func newLogKey(t *testing.T, origin string) logKey {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, origin)
	if err != nil {
		t.Fatal(err)
	}
	return logKey{skey, vkey}
}

func newTestLog(t *testing.T, dir string, k logKey) *testLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	signer, err := note.NewSigner(k.skey)
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := note.NewVerifier(k.vkey)
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
	return &testLog{dir: dir, app: app, awaiter: tessera.NewPublicationAwaiter(ctx, reader.ReadCheckpoint, 10*time.Millisecond), verifier: verifier, signer: signer}
}

// add appends leaves and waits until a checkpoint covers them all.
func (l *testLog) add(t *testing.T, leaves ...[]byte) {
	t.Helper()
	ctx := t.Context()
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

// checkpoint returns the published checkpoint, verified.
func (l *testLog) checkpoint(t *testing.T) ([]byte, *log.Checkpoint) {
	t.Helper()
	raw, err := client.FileFetcher{Root: l.dir}.ReadCheckpoint(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	cp, _, _, err := log.ParseCheckpoint(raw, l.verifier.Name(), l.verifier)
	if err != nil {
		t.Fatal(err)
	}
	return raw, cp
}

// issuer signs chained receipts the way the store does, with an
// issuer-wide sequence.
type issuer struct {
	t        *testing.T
	key      ed25519.PrivateKey
	pub      ed25519.PublicKey
	kid      string
	issuerSq int64
	sessions map[string]*session
}

type session struct {
	seq  int64
	head string
	all  [][]byte
}

func newIssuer(t *testing.T) *issuer {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &issuer{t: t, key: key, pub: pub, kid: receipts.KID(pub), sessions: map[string]*session{}}
}

func (is *issuer) sign(sess string, p receipts.Payload) []byte {
	is.t.Helper()
	s := is.sessions[sess]
	if s == nil {
		s = &session{}
		is.sessions[sess] = s
	}
	s.seq++
	is.issuerSq++
	p.SessionID, p.Sequence, p.PreviousReceiptHash, p.IssuerSequence = sess, s.seq, s.head, is.issuerSq
	r, err := receipts.Sign(is.key, p)
	if err != nil {
		is.t.Fatal(err)
	}
	s.head = receipts.ChainHash(r)
	s.all = append(s.all, r)
	return r
}

// call signs a gated call: an allow decision and its execution.
func (is *issuer) call(sess, tool string) (decision, execution []byte) {
	in := "sha256:" + tool
	decision = is.sign(sess, receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: tool, ToolInputHash: in, Decision: receipts.Allow, Reason: "cedar_allow"})
	execution = is.sign(sess, receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PostToolUse", ToolName: tool, ToolInputHash: in, Decision: receipts.Allow, DecisionReceiptHash: receipts.ChainHash(decision)})
	return decision, execution
}

func (is *issuer) start(sess string) []byte {
	return is.sign(sess, receipts.Payload{Type: receipts.TypeLifecycle, HookEvent: "SessionStart", LifecycleEvent: "session_start"})
}

func (is *issuer) end(sess string) []byte {
	s := is.sessions[sess]
	return is.sign(sess, receipts.Payload{Type: receipts.TypeLifecycle, HookEvent: "SessionEnd", LifecycleEvent: "session_end", FinalSequence: s.seq + 1, HeadHash: s.head})
}

// checkpointReceipt signs an issuer checkpoint with the current high-water mark.
func (is *issuer) checkpointReceipt(open ...string) []byte {
	is.t.Helper()
	is.issuerSq++
	r, err := receipts.Sign(is.key, receipts.Payload{Type: receipts.TypeLifecycle, SessionID: "issuer", LifecycleEvent: "issuer_checkpoint",
		IssuerSequence: is.issuerSq, IssuerHighWater: is.issuerSq, OpenSessions: open})
	if err != nil {
		is.t.Fatal(err)
	}
	return r
}

func (is *issuer) leaf(r []byte) []byte {
	is.t.Helper()
	leaf, err := receipts.NewEntry(is.pub, r)
	if err != nil {
		is.t.Fatal(err)
	}
	return leaf
}

func (is *issuer) leaves(rs ...[]byte) [][]byte {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		out[i] = is.leaf(r)
	}
	return out
}

func (is *issuer) keys() *receipts.KeySet { return receipts.PinnedKey(is.pub) }

func signCheckpoint(t *testing.T, l *testLog, n uint64, root []byte) []byte {
	t.Helper()
	body := log.Checkpoint{Origin: l.verifier.Name(), Size: n, Hash: root}.Marshal()
	b, err := note.Sign(&note.Note{Text: string(body)}, l.signer)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
