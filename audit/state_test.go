package audit

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/transparency-dev/tessera/client"

	"github.com/docketlog/docket/internal/tlogtest"
	"github.com/docketlog/docket/receipts"
)

// countingFetcher counts the entries of the bundles it reads.
type countingFetcher struct {
	client.FileFetcher
	bundles atomic.Int64
}

func (c *countingFetcher) ReadEntryBundle(ctx context.Context, i uint64, p uint8) ([]byte, error) {
	c.bundles.Add(1)
	return c.FileFetcher.ReadEntryBundle(ctx, i, p)
}

func stateAudit(t *testing.T, f Fetcher, l *tlogtest.POSIXLog, keys *receipts.KeySet, state string, chains []Chain) []Finding {
	t.Helper()
	raw, cp := l.Checkpoint(t)
	findings, err := Run(t.Context(), Config{Fetcher: f, Checkpoint: raw, Size: cp.Size, Root: cp.Hash, Keys: keys,
		EvidenceDir: t.TempDir(), StateDir: state}, chains)
	if err != nil {
		t.Fatalf("Run(-state %s): %v", state, err)
	}
	return findings
}

// TestAuditState: an audit with a state directory, run again on the grown
// log, reads only the new bundles and finds exactly what an audit without
// state finds, including what needs the entries read the first time.
func TestAuditState(t *testing.T) {
	tests := []struct {
		name string
		grow func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain
		want []string
	}{
		{"nothing new", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain { return c }, nil},
		{"a session presented", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			st := is.Start("s3")
			d, x := is.Call("s3", "Bash")
			l.Add(t, is.Leaves(st, d, x, is.End("s3"), is.Checkpoint())...)
			return append(c, Chain{Source: "s3.jsonl", Receipts: is.Sessions["s3"].All})
		}, nil},
		{"a session withheld", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			l.Add(t, is.Leaves(is.Start("s3"), is.End("s3"))...)
			return c
		}, []string{KindWithheld}},
		{"equivocation with an entry read the first time", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			s1 := c[0].Receipts
			r, err := receipts.Sign(is.Key, receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PreToolUse", ToolName: "Bash", ToolInputHash: "sha256:other",
				Decision: receipts.Deny, SessionID: "s1", Sequence: 2, PreviousReceiptHash: receipts.ChainHash(s1[0]), IssuerSequence: 2})
			if err != nil {
				t.Fatal(err)
			}
			l.Add(t, is.Leaf(r))
			return c
		}, []string{KindEquivocation, KindWithheld}},
		{"an execution of a decision read the first time", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			d := c[0].Receipts[1] // s1's decision, logged before
			x := is.Sign("s1", receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PostToolUse", ToolName: "Read", ToolInputHash: "sha256:Bash",
				Decision: receipts.Allow, DecisionReceiptHash: receipts.ChainHash(d)})
			l.Add(t, is.Leaf(x))
			return c
		}, []string{KindUnlinkedExecution, KindWithheld}},
		// s1's execution was settled as added: its call print is read
		// from its decision's, through the state's acted.bin.
		{"an execution of an execution read before, same call", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			x := is.Sign("s1", receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PostToolUse", ToolName: "Bash", ToolInputHash: "sha256:Bash",
				Decision: receipts.Allow, DecisionReceiptHash: receipts.ChainHash(c[0].Receipts[2])})
			l.Add(t, is.Leaf(x))
			return c
		}, []string{KindWithheld}},
		{"an execution of an execution read before, another call", func(t *testing.T, l *tlogtest.POSIXLog, is *tlogtest.Issuer, c []Chain) []Chain {
			x := is.Sign("s1", receipts.Payload{Type: receipts.TypeDecision, HookEvent: "PostToolUse", ToolName: "Bash", ToolInputHash: "sha256:other",
				Decision: receipts.Allow, DecisionReceiptHash: receipts.ChainHash(c[0].Receipts[2])})
			l.Add(t, is.Leaf(x))
			return c
		}, []string{KindUnlinkedExecution, KindWithheld}},
	}
	for _, tt := range tests {
		for _, old := range []bool{false, true} {
			name := tt.name
			if old {
				name += ", state of version 2"
			}
			t.Run(name, func(t *testing.T) {
				l, is, chains := honest(t)
				state := t.TempDir()
				f := &countingFetcher{FileFetcher: client.FileFetcher{Root: l.Dir}}
				if got := stateAudit(t, f, l, is.Keys(), state, chains); len(kinds(got)) != 0 {
					t.Fatalf("first audit found:\n%s", Report(got))
				}
				if old {
					toVersion2(t, state, f)
				}
				_, before := l.Checkpoint(t)
				chains = tt.grow(t, l, is, chains)
				_, after := l.Checkpoint(t)
				f.bundles.Store(0)
				got := stateAudit(t, f, l, is.Keys(), state, chains)
				if k := kinds(got); !slices.Equal(k, tt.want) {
					t.Errorf("audit with state = %v, want %v:\n%s", k, tt.want, Report(got))
				}
				if n := f.bundles.Load(); after.Size == before.Size && n != 0 {
					t.Errorf("audit with state of an unchanged log read %d entry bundles, want 0", n)
				}
				fresh := stateAudit(t, client.FileFetcher{Root: l.Dir}, l, is.Keys(), "", chains)
				if !slices.Equal(kinds(got), kinds(fresh)) || len(got) != len(fresh) {
					t.Errorf("audit with state found %d findings %v, without state %d %v", len(got), kinds(got), len(fresh), kinds(fresh))
				}
				// And once more: the state saved by the second audit holds.
				if again := stateAudit(t, f, l, is.Keys(), state, chains); !slices.Equal(kinds(again), kinds(fresh)) {
					t.Errorf("third audit with state = %v, want %v", kinds(again), kinds(fresh))
				}
			})
		}
	}
}

// toVersion2 makes a saved state look as a docket before version 3 wrote
// it: no issuer keys nor chain tops, records that hold their entries'
// previousReceiptHash and lack the flags of versions 3 and 4, and
// calls.bin and execs.bin that hold every call and every execution's link
// (no acted.bin, version 5).
func toVersion2(t *testing.T, dir string, f Fetcher) {
	t.Helper()
	name := filepath.Join(dir, "state.json")
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var sf stateFile
	if err := json.Unmarshal(b, &sf); err != nil {
		t.Fatal(err)
	}
	sf.Version, sf.FactsFrom, sf.Pending, sf.Acted = 2, 0, 0, 0
	for i := range sf.Issuers {
		sf.Issuers[i].PublicKey, sf.Issuers[i].Top = nil, nil
	}
	for i := range sf.Sessions {
		sf.Sessions[i].Top = nil
	}
	recs, err := os.ReadFile(filepath.Join(dir, "records.bin"))
	if err != nil {
		t.Fatal(err)
	}
	// Version 2 records hold each entry's previousReceiptHash, and no flag
	// of version 3 or 4.
	var leaves [][]byte
	for i := uint64(0); i < sf.Size; i += 256 {
		b, err := readBundle(t.Context(), f, i/256, sf.Size)
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, b...)
	}
	var calls, execs []byte
	sf.Calls, sf.Execs = 0, 0
	for i := 0; i+recSize <= len(recs); i += recSize {
		p := parseLedgerEntry(leaves[i/recSize])
		copy(recs[i+32:], p.prev[:])
		flags := binary.LittleEndian.Uint32(recs[i+88:])
		binary.LittleEndian.PutUint32(recs[i+88:], flags&^(flagAllow|flagRef|flagIDMismatch|flagOtherKey|flagFirst|flagLinked|flagBroken))
		pos := binary.LittleEndian.AppendUint32(nil, uint32(i/recSize))
		if p.r.flags&flagCall != 0 {
			calls = append(append(calls, pos...), p.fp[:]...)
			sf.Calls++
		}
		if p.r.flags&flagLinkHash != 0 {
			execs = append(append(execs, pos...), p.link[:]...)
			sf.Execs++
		}
	}
	for name, b := range map[string][]byte{"calls.bin": calls, "execs.bin": execs, "acted.bin": nil} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, err = json.Marshal(sf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "records.bin"), recs, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAuditStateFork: a state directory kept from one log, then shown a
// log of the same origin and key that does not extend it (smaller, the
// same size with another root, or larger but forked), is a fork finding,
// with evidence, and no entry of the other log is compared.
func TestAuditStateFork(t *testing.T) {
	k := tlogtest.NewKeyPair(t, "example.com/auditlog")
	is := tlogtest.NewIssuer(t)
	a, b := is.Leaves(is.Start("a"), is.End("a"), is.Start("b")), is.Leaves(is.Start("c"), is.End("c"))
	for _, tt := range []struct {
		name        string
		first, then [][]byte
	}{
		{"smaller", append(a, b...), a[:2]},
		{"same size, another root", a[:2], b},
		{"larger, forked", a[:2], append(b, a...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			l1 := tlogtest.NewPOSIX(t, t.TempDir(), k)
			l1.Add(t, tt.first...)
			stateAudit(t, client.FileFetcher{Root: l1.Dir}, l1, nil, state, nil)
			l2 := tlogtest.NewPOSIX(t, t.TempDir(), k)
			l2.Add(t, tt.then...)
			got := stateAudit(t, client.FileFetcher{Root: l2.Dir}, l2, nil, state, nil)
			if k := kinds(got); !slices.Equal(k, []string{KindFork}) {
				t.Fatalf("findings %v, want a fork:\n%s", k, Report(got))
			}
			if got[0].EvidenceFile == "" {
				t.Errorf("fork finding without evidence: %+v", got[0])
			}
		})
	}
}
