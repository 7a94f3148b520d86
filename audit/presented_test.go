package audit

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docketlog/docket/receipts"
)

// chainSigner signs chains of receipts from payload maps, so that a test
// can write what receipts.Sign refuses to (an issuer_id that is not the
// kid, members of the wrong type).
type chainSigner struct {
	key  ed25519.PrivateKey
	pub  ed25519.PublicKey
	kid  string
	iseq int64
}

func newChainSigner(t *testing.T) *chainSigner {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &chainSigner{key: key, pub: pub, kid: receipts.KID(pub)}
}

func (s *chainSigner) sign(t *testing.T, m map[string]any) []byte {
	t.Helper()
	base := map[string]any{"type": receipts.TypeDecision, "spec": receipts.Spec, "issued_at": "2026-11-21T12:00:00.000Z", "issuer_id": s.kid}
	s.iseq++
	base["issuer_sequence"] = s.iseq
	for k, v := range m {
		if v == nil {
			delete(base, k)
		} else {
			base[k] = v
		}
	}
	j, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := receipts.CanonicalizeJSON(j)
	if err != nil {
		t.Fatal(err)
	}
	return receipts.SignCanonical(s.key, c)
}

// step is one receipt of a test chain: its payload members beyond the
// chain's own (session_id, sequence, previousReceiptHash, which the chain
// fills in unless step sets them), and decision_receipt_hash "@N" for the
// chain hash of receipt N.
type step map[string]any

func (s *chainSigner) chain(t *testing.T, steps ...step) [][]byte {
	t.Helper()
	var out [][]byte
	for i, st := range steps {
		m := map[string]any{"session_id": "s", "sequence": i + 1}
		if i > 0 {
			m["previousReceiptHash"] = receipts.ChainHash(out[i-1])
		}
		for k, v := range st {
			if k == "previousReceiptHash" && v == "bare" {
				v = strings.TrimPrefix(receipts.ChainHash(out[i-1]), "sha256:")
			}
			if ref, ok := v.(string); ok && len(ref) > 1 && ref[0] == '@' {
				var n int
				fmt.Sscan(ref[1:], &n)
				v = receipts.ChainHash(out[n])
			}
			m[k] = v
		}
		out = append(out, s.sign(t, m))
	}
	return out
}

var (
	stStart = step{"type": receipts.TypeLifecycle, "hook_event": "SessionStart", "lifecycle_event": "session_start"}
	stEnd   = step{"type": receipts.TypeLifecycle, "hook_event": "SessionEnd", "lifecycle_event": "session_end"}
)

func stDecision(tool, decision string) step {
	return step{"hook_event": receipts.PreToolUse, "tool_name": tool, "tool_input_hash": "sha256:" + fmt.Sprintf("%064x", len(tool)), "decision": decision, "reason": "cedar_allow"}
}

func stExec(tool, decision, ref string) step {
	s := step{"hook_event": receipts.PostToolUse, "tool_name": tool, "tool_input_hash": "sha256:" + fmt.Sprintf("%064x", len(tool)), "decision": decision, "decision_receipt_hash": ref}
	if ref == "" {
		delete(s, "decision_receipt_hash")
	}
	return s
}

func with(s step, kv ...any) step {
	out := step{}
	for k, v := range s {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// TestPresentedFromLog checks that a presented chain whose receipts the
// log holds byte for byte, checked from the ledger's records without being
// parsed or verified again, gets exactly the findings receipts.VerifyChain
// gives it: the shortcut is taken only where the records settle the
// answer.
func TestPresentedFromLog(t *testing.T) {
	s := newChainSigner(t)
	other := newChainSigner(t)
	trusted := receipts.PinnedKey(s.pub)
	windowed := &receipts.KeySet{Keys: []receipts.Key{{Public: s.pub, ValidUntil: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}}}
	swap := func(rs [][]byte, i, j int) [][]byte {
		rs = slices.Clone(rs)
		rs[i], rs[j] = rs[j], rs[i]
		return rs
	}
	honest := s.chain(t, stStart, stDecision("Bash", "allow"), stExec("Bash", "allow", "@1"), stDecision("Read", "deny"), stEnd)
	tests := []struct {
		name    string
		keys    *receipts.KeySet
		chain   [][]byte
		invalid int  // findings receipts.VerifyChain gives
		short   bool // whether the records settle it
	}{
		{"honest", trusted, honest, 0, true},
		{"honest, key with a window", windowed, honest, 5, false},
		{"honest, untrusted key", receipts.PinnedKey(other.pub), honest, 5, false},
		{"honest, no keys", nil, honest, 5, false},
		{"reordered", trusted, swap(honest, 1, 2), 3, false},
		{"receipt dropped", trusted, slices.Delete(slices.Clone(honest), 1, 2), 1, false},
		{"receipt repeated", trusted, slices.Insert(slices.Clone(honest), 1, honest[1]), 1, false},
		{"approval executed", trusted, s.chain(t, stStart, stDecision("Bash", "require_approval"), stExec("Bash", "require_approval", "@1"), stEnd), 0, true},
		{"unenforced deny executed", trusted, s.chain(t, stStart, with(stDecision("Bash", "deny"), "enforced", false), stExec("Bash", "deny", "@1"), stEnd), 0, true},
		{"deny executed", trusted, s.chain(t, stStart, stDecision("Bash", "deny"), stExec("Bash", "deny", "@1"), stEnd), 1, false},
		{"execution of another tool", trusted, s.chain(t, stStart, stDecision("Bash", "allow"), stExec("Write", "allow", "@1"), stEnd), 1, false},
		{"execution of another input", trusted, s.chain(t, stStart, stDecision("Bash", "allow"), with(stExec("Bash", "allow", "@1"), "tool_input_hash", "sha256:00"), stEnd), 0, false},
		{"execution with another decision", trusted, s.chain(t, stStart, stDecision("Bash", "allow"), stExec("Bash", "require_approval", "@1"), stEnd), 1, false},
		{"execution with an unknown decision", trusted, s.chain(t, stStart, stDecision("Bash", "maybe"), stExec("Bash", "maybe", "@1"), stEnd), 1, false},
		{"execution unlinked", trusted, s.chain(t, stStart, stDecision("Bash", "allow"), stExec("Bash", "allow", ""), stEnd), 1, false},
		{"execution linking a lifecycle receipt", trusted, s.chain(t, stStart, stDecision("Bash", "allow"), stExec("Bash", "allow", "@0"), stEnd), 1, false},
		{"execution linking a bare hash", trusted, s.chain(t, stStart, stDecision("Bash", "allow"), stExec("Bash", "allow", "sha256:ABC"), stEnd), 1, false},
		{"failed execution", trusted, s.chain(t, stStart, stDecision("Bash", "allow"), with(stExec("Bash", "allow", "@1"), "hook_event", receipts.PostToolUseFailure), stEnd), 0, true},
		{"decision linking a decision", trusted, s.chain(t, stStart, stDecision("Bash", "allow"), with(stDecision("Bash", "allow"), "decision_receipt_hash", "@1"), stEnd), 0, false},
		{"decision_receipt_hash not a string", trusted, s.chain(t, stStart, stDecision("Bash", "allow"), with(stExec("Bash", "allow", "@1"), "decision_receipt_hash", 7), stEnd), 1, false},
		{"link broken", trusted, s.chain(t, stStart, with(stDecision("Bash", "allow"), "previousReceiptHash", "sha256:"+fmt.Sprintf("%064x", 1)), stEnd), 1, false},
		{"link missing", trusted, s.chain(t, stStart, with(stDecision("Bash", "allow"), "previousReceiptHash", nil), stEnd), 1, false},
		{"link bare hex", trusted, s.chain(t, stStart, with(stDecision("Bash", "allow"), "previousReceiptHash", "bare"), stEnd), 0, false},
		{"sequence skips", trusted, s.chain(t, stStart, with(stDecision("Bash", "allow"), "sequence", 3), stEnd), 2, false},
		{"sequence absent", trusted, s.chain(t, with(stStart, "sequence", nil), stDecision("Bash", "allow"), stEnd), 0, false},
		{"sequence zero", trusted, s.chain(t, with(stStart, "sequence", 0), with(stDecision("Bash", "allow"), "sequence", 1), stEnd), 1, false},
		{"sequence past int64", trusted, s.chain(t, stStart, with(stDecision("Bash", "allow"), "sequence", json.Number("18446744073709551617")), stEnd), 0, false},
		{"sequence a string", trusted, s.chain(t, stStart, with(stDecision("Bash", "allow"), "sequence", "2"), stEnd), 0, false},
		{"session changes", trusted, s.chain(t, stStart, with(stDecision("Bash", "allow"), "session_id", "t"), stEnd), 2, false},
		{"issuer_id not the kid", trusted, s.chain(t, stStart, with(stDecision("Bash", "allow"), "issuer_id", other.kid), stEnd), 1, false},
		{"another spec, issuer_id not the kid", trusted, s.chain(t, stStart, with(stDecision("Bash", "allow"), "issuer_id", other.kid, "spec", "draft-05"), stEnd), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every receipt of the chain is logged, under its signer's key.
			l := newLedger()
			for _, r := range tt.chain {
				leaf, err := receipts.NewEntry(s.pub, r)
				if err != nil {
					t.Fatalf("NewEntry: %v", err)
				}
				l.add(parseLedgerEntry(leaf))
			}
			chains := []Chain{{Source: "c.jsonl", Receipts: tt.chain}}
			fast, fastInvalid, err := verifyChains(tt.keys, chains, l, l.byHash())
			if err != nil {
				t.Fatal(err)
			}
			slow, slowInvalid, err := verifyChains(tt.keys, chains, newLedger(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(slowInvalid) != tt.invalid {
				t.Errorf("receipts.VerifyChain: %d findings, want %d:\n%s", len(slowInvalid), tt.invalid, Report(slowInvalid))
			}
			if got, want := Report(fastInvalid), Report(slowInvalid); got != want {
				t.Errorf("from the log:\n%s\nwant, as receipts.VerifyChain:\n%s", got, want)
			}
			// Both find every receipt in the log; the slow way with an
			// empty ledger, none.
			if len(slow.unlogged) != len(tt.chain) || len(fast.unlogged) != 0 {
				t.Errorf("unlogged receipts: %d from the log, %d without, want 0 and %d", len(fast.unlogged), len(slow.unlogged), len(tt.chain))
			}
			for i, at := range fast.at {
				if at == 0 || l.recs[at-1].hash != slow.unlogged[uint32(i)] {
					t.Errorf("receipt %d found at log position %d, want the entry of hash %x", i, int(at)-1, slow.unlogged[uint32(i)])
				}
			}
			lg := newLogged(l, l.byHash(), tt.keys)
			if at, _ := lg.fromLog(tt.chain); (at != nil) != tt.short {
				t.Errorf("fromLog took the shortcut: %v, want %v", at != nil, tt.short)
			}
		})
	}
}

// TestChainLinksAsAdded checks the chain links the ledger settles as
// entries are added, and the ones it keeps pending, against the rule
// itself: each entry of sequence s ≥ 2 must link the first entry (by log
// index) of sequence s-1 of its chain (issuer and session), if there is
// one. Logs in chain order, in reverse, shuffled, with equivocation,
// repeats, gaps, legacy links and receipts without a session.
func TestChainLinksAsAdded(t *testing.T) {
	a, b := newChainSigner(t), newChainSigner(t)
	chain := a.chain(t, stStart, stDecision("Bash", "allow"), stExec("Bash", "allow", "@1"), stDecision("Read", "deny"), stEnd)
	// Another receipt of sequence 3 (equivocation), and a 4 that links it.
	eq := a.chain(t, stStart, stDecision("Bash", "allow"), stDecision("Write", "allow"), stEnd)
	noSession := a.chain(t, with(stStart, "session_id", nil), with(stDecision("Bash", "allow"), "session_id", nil), with(stEnd, "session_id", nil))
	noSessionB := b.chain(t, with(stStart, "session_id", nil), with(stDecision("Bash", "allow"), "session_id", nil), with(stEnd, "session_id", nil))
	legacy := a.chain(t, with(stStart, "session_id", "t"), with(stDecision("Bash", "allow"), "session_id", "t", "previousReceiptHash", "bare"), with(stEnd, "session_id", "t"))
	type entry struct {
		pub ed25519.PublicKey
		r   []byte
	}
	of := func(s *chainSigner, rs ...[]byte) []entry {
		var out []entry
		for _, r := range rs {
			out = append(out, entry{s.pub, r})
		}
		return out
	}
	rev := func(es []entry) []entry { es = slices.Clone(es); slices.Reverse(es); return es }
	tests := []struct {
		name string
		log  []entry
	}{
		{"in order", of(a, chain...)},
		{"reversed", rev(of(a, chain...))},
		{"shuffled", of(a, chain[2], chain[0], chain[4], chain[1], chain[3])},
		{"equivocation, first logged first", of(a, chain[0], chain[1], chain[2], eq[2], eq[3], chain[3])},
		{"equivocation, other logged first", of(a, chain[0], chain[1], eq[2], chain[2], chain[3], eq[3])},
		{"successor before its predecessor", of(a, chain[0], chain[1], chain[3], chain[2], chain[4])},
		{"repeated", of(a, chain[0], chain[1], chain[1], chain[2], chain[2], chain[3])},
		{"gap", of(a, chain[0], chain[1], chain[3], chain[4])},
		{"no session, two issuers", append(of(a, noSession...), of(b, noSessionB...)...)},
		{"no session, interleaved", []entry{{a.pub, noSession[0]}, {b.pub, noSessionB[0]}, {b.pub, noSessionB[1]}, {a.pub, noSession[1]}, {a.pub, noSession[2]}, {b.pub, noSessionB[2]}}},
		{"legacy link", of(a, legacy...)},
		{"two sessions interleaved", []entry{{a.pub, chain[0]}, {a.pub, legacy[0]}, {a.pub, chain[1]}, {a.pub, legacy[1]}, {a.pub, chain[2]}, {a.pub, legacy[2]}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger()
			var ps []parsed
			for _, e := range tt.log {
				leaf, err := receipts.NewEntry(e.pub, e.r)
				if err != nil {
					t.Fatal(err)
				}
				p := parseLedgerEntry(leaf)
				ps = append(ps, p)
				l.add(p)
			}
			// The rule, on the parsed entries.
			var want []uint64
			for i, p := range ps {
				r := &l.recs[i]
				if p.r.seq < 2 {
					continue
				}
				first := -1
				for j := range ps {
					q := &l.recs[j]
					if q.issuer == r.issuer && q.session == r.session && q.seq == r.seq-1 {
						first = j
						break
					}
				}
				if first >= 0 && (p.r.flags&flagPrevHash == 0 || p.prev != l.recs[first].hash) {
					want = append(want, uint64(i))
				}
			}
			var out findingList
			out.init()
			l.analyse(&selection{}, nil, l.byHash(), &out)
			var got []uint64
			for _, f := range out.all() {
				if f.Kind == KindChainBreak {
					got = append(got, f.Index)
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("chain breaks at %v, want %v", got, want)
			}
		})
	}
}

// TestExecutionLinksAsAdded checks what the ledger keeps of executions and
// calls, settled as entries are added (acted) or not (execs), against what
// each entry holds: every execution's decision_receipt_hash (linkHash) and
// every call's fingerprint (fp) read back as parsed, whatever the order of
// the log; and an execution of its session's recent decision on the same
// call keeps neither (8 bytes in acted).
func TestExecutionLinksAsAdded(t *testing.T) {
	a := newChainSigner(t)
	chain := a.chain(t, stStart, stDecision("Bash", "allow"), stExec("Bash", "allow", "@1"), stDecision("Read", "deny"), stEnd)
	far := a.chain(t, stStart, stDecision("Bash", "allow"), stDecision("Read", "allow"), stDecision("Write", "allow"),
		stDecision("Grep", "allow"), stDecision("Glob", "allow"), stExec("Bash", "allow", "@1"), stExec("Read", "allow", "@2"), stEnd)
	other := a.chain(t, stStart, stDecision("Bash", "allow"), stExec("Write", "allow", "@1"), stExec("Write", "allow", "@2"), stExec("Bash", "allow", "@1"), stEnd)
	noSession := a.chain(t, with(stStart, "session_id", nil), with(stDecision("Bash", "allow"), "session_id", nil), with(stExec("Bash", "allow", "@1"), "session_id", nil))
	elsewhere := a.chain(t, with(stStart, "session_id", "u"), with(stExec("Bash", "allow", "x"), "session_id", "u", "decision_receipt_hash", receipts.ChainHash(chain[1])))
	rev := func(rs [][]byte) [][]byte { rs = slices.Clone(rs); slices.Reverse(rs); return rs }
	tests := []struct {
		name   string
		log    [][]byte
		elided int // calls not kept in calls, their fingerprint their decision's
	}{
		{"in order", chain, 1},
		{"reversed", rev(chain), 0},
		{"decision out of the recent ones", far, 0},
		{"other call, execution of an execution, repeated", other, 2},
		{"repeated decision", [][]byte{chain[0], chain[1], chain[1], chain[2], chain[2]}, 2},
		{"no session", noSession, 0},
		{"decision in another session", append(slices.Clone(chain), elsewhere...), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger()
			var ps []parsed
			calls := 0
			for _, r := range tt.log {
				leaf, err := receipts.NewEntry(a.pub, r)
				if err != nil {
					t.Fatal(err)
				}
				p := parseLedgerEntry(leaf)
				if p.bad != nil {
					t.Fatal(p.bad)
				}
				ps = append(ps, p)
				l.add(p)
				if p.r.flags&flagCall != 0 {
					calls++
				}
			}
			for i, p := range ps {
				fp, ok := l.fp(uint32(i))
				if ok != (p.r.flags&flagCall != 0) || ok && fp != p.fp {
					t.Errorf("fp(%d) = %x, %v, want %x, %v", i, fp, ok, p.fp, p.r.flags&flagCall != 0)
				}
				if p.r.flags&flagLinkHash != 0 {
					if got := l.linkHash(uint32(i)); got != p.link {
						t.Errorf("linkHash(%d) = %x, want %x", i, got, p.link)
					}
				}
			}
			if got := calls - len(l.calls); got != tt.elided {
				t.Errorf("calls elided = %d, want %d", got, tt.elided)
			}
		})
	}
}
