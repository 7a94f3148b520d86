package audit

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/transparency-dev/tessera/api/layout"
	"github.com/transparency-dev/tessera/client"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
)

// honest builds an issuer with two ended sessions and an issuer checkpoint,
// all logged; it returns the log and the chains as the issuer holds them.
func honest(t *testing.T) (*tlogtest.POSIXLog, *tlogtest.Issuer, []Chain) {
	t.Helper()
	l := tlogtest.NewPOSIX(t, t.TempDir(), tlogtest.NewKeyPair(t, "example.com/auditlog"))
	is := tlogtest.NewIssuer(t)
	var all [][]byte
	for _, s := range []string{"s1", "s2"} {
		all = append(all, is.Start(s))
		d, x := is.Call(s, "Bash")
		all = append(all, d, x)
		all = append(all, is.End(s))
	}
	all = append(all, is.Checkpoint())
	l.Add(t, is.Leaves(all...)...)
	return l, is, []Chain{{Source: "s1.jsonl", Receipts: is.Sessions["s1"].All}, {Source: "s2.jsonl", Receipts: is.Sessions["s2"].All}}
}

func runAudit(t *testing.T, l *tlogtest.POSIXLog, keys *receipts.KeySet, chains []Chain) []Finding {
	t.Helper()
	raw, cp := l.Checkpoint(t)
	findings, err := Run(t.Context(), Config{
		Fetcher: client.FileFetcher{Root: l.Dir}, Checkpoint: raw, Size: cp.Size, Root: cp.Hash,
		Keys: keys, EvidenceDir: t.TempDir(),
	}, chains)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return findings
}

func kinds(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if !f.Notice {
			out = append(out, f.Kind)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestAuditHonest(t *testing.T) {
	l, is, chains := honest(t)
	if got := runAudit(t, l, is.Keys(), chains); len(kinds(got)) != 0 {
		t.Fatalf("honest audit found:\n%s", Report(got))
	}
}

func TestAuditFindings(t *testing.T) {
	tests := []struct {
		name string
		// mutate changes what is logged or presented.
		mutate func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, chains []Chain) []Chain
		want   []string
	}{
		{"deleted local receipt", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			c[0].Receipts = slices.Delete(slices.Clone(c[0].Receipts), 1, 2)
			return c
		}, []string{KindInvalidReceipt, KindWithheld}},
		{"withheld session", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			return c[:1]
		}, []string{KindWithheld}},
		{"session never submitted", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			is.Start("hidden")
			is.Call("hidden", "Bash")
			is.End("hidden")
			s3 := is.Start("s3")
			l.Add(t, is.Leaf(s3)) // only a later session reaches the log
			return append(c, Chain{Source: "s3.jsonl", Receipts: [][]byte{s3}})
		}, []string{KindIssuerSequenceGap}},
		{"chain cut at its end", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			st := is.Start("s3")
			d, _ := is.Call("s3", "Bash") // the execution and the end are never logged
			is.End("s3")
			l.Add(t, is.Leaves(st, d, is.Checkpoint())...)
			return append(c, Chain{Source: "s3.jsonl", Receipts: [][]byte{st, d}})
		}, []string{KindIssuerSequenceGap}},
		{"replaced receipt", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			r := slices.Clone(c[1].Receipts)
			p := receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: "Read", ToolInputHash: "sha256:x",
				Decision: receipts.Allow, SessionID: "s2", Sequence: 2, PreviousReceiptHash: receipts.ChainHash(r[0]), IssuerSequence: 6}
			nr, err := receipts.Sign(is.Key, p)
			if err != nil {
				t.Fatal(err)
			}
			r[1] = nr
			c[1].Receipts = r
			return c
		}, []string{KindDropped, KindInvalidReceipt, KindWithheld}},
		{"reordered chain", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			r := slices.Clone(c[0].Receipts)
			r[1], r[2] = r[2], r[1]
			c[0].Receipts = r
			return c
		}, []string{KindInvalidReceipt}},
		{"execution without an allow", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			x := is.Sign("s4", receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PostToolUse", ToolName: "Bash", ToolInputHash: "sha256:y",
				Decision: receipts.Allow, DecisionReceiptHash: "sha256:" + strings.Repeat("0", 64)})
			l.Add(t, is.Leaf(x))
			return c
		}, []string{KindUnlinkedExecution, KindWithheld}},
		{"equivocating issuer", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			s1 := c[0].Receipts
			p := receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: "Bash", ToolInputHash: "sha256:other",
				Decision: receipts.Deny, SessionID: "s1", Sequence: 2, PreviousReceiptHash: receipts.ChainHash(s1[0]), IssuerSequence: 2}
			r, err := receipts.Sign(is.Key, p)
			if err != nil {
				t.Fatal(err)
			}
			l.Add(t, is.Leaf(r))
			return c
		}, []string{KindEquivocation, KindWithheld}},
		{"bundle that does not match its tiles", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			p := filepath.Join(l.Dir, layout.EntriesPath(0, uint8(9)))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)-3] ^= 1 // inside the last entry's signature hex
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return c
		}, []string{KindRootMismatch}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, is, chains := honest(t)
			chains = tt.mutate(t, l, is, chains)
			got := runAudit(t, l, is.Keys(), chains)
			if k := kinds(got); !slices.Equal(k, tt.want) {
				t.Fatalf("findings %v, want %v:\n%s", k, tt.want, Report(got))
			}
			checkEvidence(t, got, l.Verifier)
		})
	}
}

// TestAuditOneSession: with only some sessions selected, the issuer's
// counter still counts every session's receipts, so the others are no gap.
func TestAuditOneSession(t *testing.T) {
	l, is, chains := honest(t)
	raw, cp := l.Checkpoint(t)
	findings, err := Run(t.Context(), Config{Fetcher: client.FileFetcher{Root: l.Dir}, Checkpoint: raw, Size: cp.Size, Root: cp.Hash,
		Keys: is.Keys(), Sessions: []string{"s2"}}, chains[1:])
	if err != nil {
		t.Fatal(err)
	}
	if k := kinds(findings); len(k) != 0 {
		t.Fatalf("auditing session s2 alone found %v:\n%s", k, Report(findings))
	}
}

// provable are the kinds of finding whose evidence file proves them with
// the log key alone.
var provable = map[string]bool{KindFork: true, KindWitnessSplitView: true, KindEquivocation: true, KindWithheld: true,
	KindRootMismatch: true, KindExecutedDeny: true, KindChainBreak: true, KindBadEntry: true}

// checkEvidence reads the evidence file of every finding that has one and
// requires VerifyEvidence to prove the provable kinds.
func checkEvidence(t *testing.T, fs []Finding, logKey note.Verifier) {
	t.Helper()
	for _, f := range fs {
		if f.EvidenceFile == "" {
			continue
		}
		b, err := os.ReadFile(f.EvidenceFile)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := ParseEvidence(b)
		if err != nil {
			t.Fatalf("ParseEvidence(%s): %v", f.EvidenceFile, err)
		}
		msg, err := VerifyEvidence(ev, logKey)
		if provable[f.Kind] && err != nil {
			t.Errorf("VerifyEvidence(%s) = %v, want proven", f.EvidenceFile, err)
		}
		t.Logf("%s: %s %v", f.Kind, msg, err)
	}
}
