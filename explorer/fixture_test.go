package explorer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/logclient"
	"github.com/docketlog/docket/receipts"
)

// A fixture is a real Tessera log of agent sessions, as Docket's hooks
// sign them, and a still copy of it whose checkpoint two of three
// witnesses cosigned (quorum: 2 of 3).
type fixture struct {
	Log      *tlogtest.POSIXLog
	Dir      string // the still, cosigned copy
	Verifier *c2sp.ProofVerifier
	Issuers  []*tlogtest.Issuer
	VKey     string // the log's key
	Policy   string // the witness policy
}

// newFixture builds a log of n entries from issuers issuers: sessions of
// about 25 receipts (start, calls allowed and executed, denied, asked,
// denied in observe mode, an unmediated call now and then, end), issued 17
// seconds apart from 2026-11-24T00:00Z.
func newFixture(t testing.TB, n, issuers int) *fixture {
	t.Helper()
	k := tlogtest.NewKeyPair(t, "example.com/fixture")
	l := tlogtest.NewPOSIX(t, t.TempDir(), k)
	f := &fixture{Log: l}
	for range issuers {
		f.Issuers = append(f.Issuers, tlogtest.NewIssuer(t))
	}
	base := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	no := false
	var batch [][]byte
	flush := func() {
		l.Add(t, batch...)
		batch = batch[:0]
	}
	open := map[int]string{} // an issuer's open session
	calls := map[int]int{}
	for i := 0; i < n; i++ {
		which := i % issuers
		is := f.Issuers[which]
		at := receipts.FormatTime(base.Add(time.Duration(i) * 17 * time.Second))
		sess, ok := open[which]
		var r []byte
		switch {
		case !ok:
			sess = fmt.Sprintf("session-%d-%d", which, i)
			open[which] = sess
			r = is.Sign(sess, receipts.Payload{Type: receipts.TypeLifecycle, HookEvent: "SessionStart", LifecycleEvent: "session_start", IssuedAt: at})
		case calls[which] >= 24:
			s := is.Sessions[sess]
			r = is.Sign(sess, receipts.Payload{Type: receipts.TypeLifecycle, HookEvent: "SessionEnd", LifecycleEvent: "session_end",
				FinalSequence: s.Seq + 1, HeadHash: s.Head, IssuedAt: at})
			delete(open, which)
			calls[which] = 0
		default:
			calls[which]++
			r = f.call(is, sess, i, at, &no)
		}
		// Keep only each session's head: a large fixture does not hold
		// every receipt in memory.
		if s := is.Sessions[sess]; s != nil {
			s.All = s.All[len(s.All)-1:]
		}
		if _, ok := open[which]; !ok {
			delete(is.Sessions, sess)
		}
		batch = append(batch, is.Leaf(r))
		if len(batch) == 4096 {
			flush()
		}
	}
	flush()
	f.Dir, f.Verifier, f.Policy = cosigned(t, l, k)
	f.VKey = k.VKey
	return f
}

var tools = []string{"Bash", "Read", "Edit", "WebFetch", "Write", "mcp__github__create_issue"}

// call signs the receipt of the i-th entry inside a session: mostly allowed
// calls and their executions, some denies and asks.
func (f *fixture) call(is *tlogtest.Issuer, sess string, i int, at string, no *bool) []byte {
	tool := tools[(i/7)%len(tools)]
	in := "sha256:" + strings.Repeat(fmt.Sprintf("%x", i%16), 64)
	dec := func(decision string, ids ...string) receipts.Payload {
		return receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", Agent: "claude-code", ToolName: tool, ToolInputHash: in,
			Decision: decision, Reason: "cedar_" + decision, PolicyIDs: ids, IssuedAt: at}
	}
	s := is.Sessions[sess]
	switch x := i % 23; {
	case x == 3 || x == 11:
		return is.Sign(sess, dec(receipts.Deny, []string{"secrets-by-name", "no-network", "no-force-push"}[i%3]))
	case x == 7:
		return is.Sign(sess, dec(receipts.RequireApproval, "ask-network"))
	case x == 17:
		p := dec(receipts.Deny, "no-writes")
		p.Enforced = no
		return is.Sign(sess, p)
	case x == 19 && i%5 == 0:
		return is.Sign(sess, receipts.Payload{Type: receipts.TypeDecision, HookEvent: "unmediated_call", ToolName: tool, ToolUseID: fmt.Sprint("toolu_", i),
			ToolInputHash: in, IssuedAt: at})
	case x%2 == 1 && s != nil && len(s.All) > 0:
		// The execution of the decision before, if it allowed.
		last := s.All[len(s.All)-1]
		if strings.Contains(string(last), `"decision":"allow"`) && strings.Contains(string(last), `"PreToolUse"`) {
			// The tool the decision allowed.
			if _, rest, ok := strings.Cut(string(last), `"tool_name":"`); ok {
				tool, _, _ = strings.Cut(rest, `"`)
			}
			p := dec(receipts.Allow)
			p.HookEvent, p.Reason, p.PolicyIDs, p.DecisionReceiptHash = "PostToolUse", "", nil, receipts.ChainHash(last)
			return is.Sign(sess, p)
		}
	}
	return is.Sign(sess, dec(receipts.Allow, []string{"read-workspace", "bash-safe"}[i%2]))
}

// cosigned copies the log's storage and has two of three witnesses cosign
// its checkpoint; it returns the copy and a verifier with the policy.
func cosigned(t testing.TB, l *tlogtest.POSIXLog, k tlogtest.KeyPair) (string, *c2sp.ProofVerifier, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log")
	// Tessera removes partial bundles and tiles once full ones are
	// written, in the background: copy again until a copy holds still.
	var err error
	for range 50 {
		os.RemoveAll(dir)
		if err = os.CopyFS(dir, os.DirFS(l.Dir)); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(raw, note.VerifierList(l.Verifier))
	if err != nil {
		t.Fatal(err)
	}
	policy := "log " + k.VKey + "\n"
	var signers []note.Signer
	for i, name := range []string{"witness.example/alpha", "witness.example/beta", "witness.example/gamma"} {
		skey, _, err := c2sp.GenerateKey(name)
		if err != nil {
			t.Fatal(err)
		}
		s, vkey, err := c2sp.NewCosigner(skey)
		if err != nil {
			t.Fatal(err)
		}
		policy += fmt.Sprintf("witness w%d %s\n", i, vkey)
		if i < 2 {
			signers = append(signers, s)
		}
	}
	policy += "group two-of-three 2 w0 w1 w2\nquorum two-of-three\n"
	signed, err := note.Sign(n, signers...)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "checkpoint"), signed, 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := c2sp.NewProofVerifier(k.VKey, []byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	return dir, v, policy
}

// dirFetcher reads a log's storage directory through logclient, the
// project's one log client.
func dirFetcher(t testing.TB, dir string) Fetcher {
	t.Helper()
	return newClient(t, logclient.NewDirOps(dir))
}

// newClient returns a log client over ops. Its verifier (of a key of its
// own) is not used: the explorer reads and verifies what the client reads.
func newClient(t testing.TB, ops logclient.ClientOps) *logclient.Client {
	t.Helper()
	v, err := c2sp.NewProofVerifier(tlogtest.NewKeyPair(t, "example.com/unused").VKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := logclient.New(ops, logclient.Config{Verifier: v, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
