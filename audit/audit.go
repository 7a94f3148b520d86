package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/transparency-dev/tessera/client"

	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
)

// A Chain is a session chain presented to an auditor, in chain order.
type Chain struct {
	// Source names where the chain came from, for the report.
	Source   string
	Receipts [][]byte
}

// Config says what an audit reads and trusts.
type Config struct {
	// Fetcher reads the log: a URL or a local storage directory.
	Fetcher Fetcher
	// Checkpoint is the log's signed checkpoint note, already verified by
	// the caller against the log key and the witness quorum; Size and Root
	// are its tree.
	Checkpoint []byte
	Size       uint64
	Root       []byte
	// Keys are the trusted issuer keys for the presented chains.
	Keys *receipts.KeySet
	// Issuers and Sessions select what is compared. With chains presented
	// and no Issuers, the issuers of the presented receipts are selected.
	Issuers  []string
	Sessions []string
	// EvidenceDir, if set, receives one evidence file per finding that has
	// evidence.
	EvidenceDir string
}

// Run reads the whole log, recomputes its root, and compares what it holds
// with the presented chains. It returns every finding; an error means the
// audit could not be completed (undecidable), except that a log whose
// entries do not match its signed root is a finding (root_mismatch).
func Run(ctx context.Context, cfg Config, chains []Chain) ([]Finding, error) {
	v := NewView()
	v.Issuers = set(cfg.Issuers, nil)
	v.Sessions = set(cfg.Sessions, Clip) // as records keep them
	var out findingList
	presented := make(map[string]bool)
	kids := make(map[string]bool) // the issuers of the presented receipts
	for _, c := range chains {
		out.add(checkChain(cfg.Keys, c, presented, kids)...)
	}
	if len(chains) > 0 && len(v.Issuers) == 0 {
		v.Issuers = kids
	}
	err := Scan(ctx, cfg.Fetcher, cfg.Size, cfg.Root, NewRange(), v.Add)
	var rm *RootMismatchError
	if errors.As(err, &rm) {
		f, ferr := rootMismatch(ctx, cfg.Fetcher, cfg.Size, rm)
		if ferr != nil {
			return nil, ferr
		}
		out.add(f)
		// What the log served at that index is not in its tree: a bad
		// entry there is the mismatch itself, not an entry the log holds.
		v.findings.deleteFunc(func(b Finding) bool { return b.Kind == KindBadEntry && b.Index == f.Index })
	} else if err != nil {
		return nil, fmt.Errorf("reading the log: %w", err)
	}

	if len(chains) > 0 {
		compare(v, chains, presented, &out)
	}
	v.logFindings(&out)
	unenforcedFindings(v, &out)
	for _, r := range v.records {
		if isExecution(r) {
			if _, logged := v.byHash[r.DecisionReceiptHash]; !logged && !presented[r.DecisionReceiptHash] {
				out.add(Finding{Kind: KindUnlinkedExecution, Issuer: r.Issuer, Session: r.Session, Sequence: r.Sequence, Index: r.Index,
					Message: fmt.Sprintf("session %q: logged execution %d links a decision that is neither logged nor presented", r.Session, r.Sequence),
					records: []*Record{r}})
			}
		}
	}
	for _, issuer := range sortedKeys(v.issuers) {
		if n := v.issuers[issuer].legacy; n > 0 {
			out.add(Finding{Kind: KindUndecidedLegacy, Issuer: issuer, Notice: true,
				Message: fmt.Sprintf("issuer %s: %d logged receipts carry no issuer_sequence; omissions among them cannot be decided from the log", issuer, n)})
		}
	}
	findings := out.all()
	if cfg.EvidenceDir != "" {
		if err := prove(ctx, cfg.Fetcher, cfg.Checkpoint, cfg.Size, findings, evidenceWriter(cfg.EvidenceDir)); err != nil {
			return nil, err
		}
	}
	return findings, nil
}

// checkChain verifies one presented chain and notes its receipts' hashes
// and issuers.
func checkChain(keys *receipts.KeySet, c Chain, presented, kids map[string]bool) []Finding {
	var out []Finding
	for i, res := range receipts.VerifyChain(c.Receipts, receipts.Options{Keys: keys}) {
		if res.Hash != "" {
			presented[res.Hash] = true
		}
		if res.KID != "" {
			kids[res.KID] = true
		}
		if res.Outcome != receipts.Valid {
			out = append(out, Finding{Kind: KindInvalidReceipt, Issuer: res.KID, Source: c.Source, Sequence: int64(i + 1),
				Message: fmt.Sprintf("%s receipt %d: %s: %s: %s", c.Source, i+1, res.Outcome, res.Cause, res.Detail)})
		}
	}
	return out
}

// compare finds presented receipts missing from the log, and selected
// logged receipts missing from what was presented: one withheld finding per
// session, with the number of its entries withheld and the first of them as
// evidence.
func compare(v *View, chains []Chain, presented map[string]bool, out *findingList) {
	for _, c := range chains {
		for i, r := range c.Receipts {
			h, err := receipts.Hash(r)
			if err != nil {
				continue // reported by checkChain
			}
			if _, ok := v.byHash[h]; ok {
				continue
			}
			// Members by their exact names: the strict parser, not
			// encoding/json, which matches them case-insensitively.
			doc, _ := strictjson.ParseObject(r)
			payload, _ := doc["payload"].(map[string]any)
			p := payloadFrom(payload)
			issuer, _ := payload["issuer_id"].(string)
			session, _ := payload["session_id"].(string)
			rec := &Record{Issuer: issuer, Session: Clip(session), Payload: p}
			if !v.selected(rec) {
				continue
			}
			out.add(Finding{Kind: KindDropped, Issuer: rec.Issuer, Session: rec.Session, Sequence: rec.Sequence, Source: c.Source,
				Message: fmt.Sprintf("%s receipt %d (session %q, sequence %d, %s) is not in the log of size %d", c.Source, i+1, rec.Session, rec.Sequence, h, v.size)})
		}
	}
	type session struct{ issuer, session string }
	withheld := make(map[session]*Finding)
	var order []session
	more := make(map[session]int) // past MaxPerKind sessions, only counts

	for _, r := range v.records {
		// Issuer checkpoints belong to no session chain: nobody presents them.
		if presented[r.Hash] || r.LifecycleEvent == "issuer_checkpoint" {
			continue
		}
		k := session{r.Issuer, r.Session}
		if f := withheld[k]; f != nil {
			f.Count++
			continue
		}
		if len(order) == MaxPerKind {
			more[k]++
			continue
		}
		withheld[k] = &Finding{Kind: KindWithheld, Issuer: r.Issuer, Session: r.Session, Sequence: r.Sequence, Index: r.Index, Count: 1, records: []*Record{r}}
		order = append(order, k)
	}
	for _, k := range order {
		f := withheld[k]
		r := f.records[0]
		f.Message = fmt.Sprintf("log entry %d (session %q, sequence %d, %s) was not presented", r.Index, r.Session, r.Sequence, r.Hash)
		if f.Count > 1 {
			f.Message += fmt.Sprintf(", nor were the %d later logged receipts of the session", f.Count-1)
		}
		out.add(*f)
	}
	for _, n := range more {
		out.add(Finding{Kind: KindWithheld, Count: n})
	}
}

// rootMismatch turns a root mismatch into a finding whose evidence is the
// first entry the log serves that its own tiles (and so its signed root)
// do not contain: the entry, and the inclusion proof of the leaf hash the
// tree has at that index.
func rootMismatch(ctx context.Context, fetcher Fetcher, size uint64, rm *RootMismatchError) (Finding, error) {
	f := Finding{Kind: KindRootMismatch, Message: rm.Error()}
	for first := uint64(0); first < size; first += 256 {
		n := min(256, size-first)
		want, err := client.FetchLeafHashes(ctx, tileReader(fetcher), first, n, size)
		if err != nil {
			return f, fmt.Errorf("reading leaf tiles: %w", err)
		}
		entries, err := readBundle(ctx, fetcher, first/256, size)
		if err != nil {
			return f, err
		}
		for i := range want {
			if string(leafHash(entries[i])) != string(want[i]) {
				idx := first + uint64(i)
				f.Index = idx
				f.Message = fmt.Sprintf("log entry %d as served does not hash to the leaf the signed tree holds at %d: %v", idx, idx, rm)
				// prove reads the served entry and the tree's inclusion proof.
				f.evidence = &Evidence{Kind: KindRootMismatch, Entries: []EvidenceEntry{{Index: idx}}, TreeLeafHash: b64s([][]byte{want[i]})[0]}
				return f, nil
			}
		}
	}
	return f, nil
}

// evidenceWriter returns a function that writes a finding's evidence to the
// next file of dir, named for its number and kind, and records its name.
func evidenceWriter(dir string) func(*Finding) error {
	n := 0
	return func(f *Finding) error {
		if n == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("evidence directory: %w", err)
			}
		}
		n++
		b, err := json.MarshalIndent(f.evidence, "", "  ")
		if err != nil {
			return err
		}
		name := filepath.Join(dir, fmt.Sprintf("%03d-%s.json", n, f.Kind))
		if err := os.WriteFile(name, append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing evidence: %w", err)
		}
		f.EvidenceFile = name
		return nil
	}
}

// set returns the set of xs, each mapped through f if it is not nil.
func set(xs []string, f func(string) string) map[string]bool {
	if len(xs) == 0 {
		return nil
	}
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		if f != nil {
			x = f(x)
		}
		m[x] = true
	}
	return m
}
