package docketcmd

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/docketlog/docket/internal/plural"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

const statusUsage = `Usage:
    docket status [-json]

Shows the project at a glance, from what is on disk (it does not contact
the log): the sessions and their receipts, how many are proven in the log
and how many still pending, the log and its size at the latest proof, the
latest proven receipt, and the last docket sync — background runs the
hooks start included — with its error and fix when it failed.

Options:
    -json   one JSON object instead of text

Exit codes:
    0  the status was printed
    2  not in a project, or the store could not be read
`

// projectStatus is what docket status reports (its -json form).
type projectStatus struct {
	Project    string `json:"project"`
	Log        string `json:"log,omitempty"`
	RequireLog bool   `json:"require_log,omitempty"`
	Observe    bool   `json:"observe,omitempty"`
	Journal    bool   `json:"journal,omitempty"`
	Sessions   int    `json:"sessions"`
	Receipts   int    `json:"receipts"`
	Proven     int    `json:"proven"`
	Pending    int    `json:"pending"`
	// LogSize is the log's size in the checkpoint of the latest proof.
	LogSize      uint64            `json:"log_size,omitempty"`
	LatestProven *provenReceipt    `json:"latest_proven,omitempty"`
	LastSync     *store.SyncRecord `json:"last_sync,omitempty"`
	Syncing      bool              `json:"syncing,omitempty"`
	// Damaged are the files holding a chain's torn or damaged tail.
	Damaged []string `json:"damaged,omitempty"`
}

// provenReceipt names a receipt whose proof verified.
type provenReceipt struct {
	Session  string `json:"session"`
	Sequence int64  `json:"sequence"`
	Hash     string `json:"receipt_hash"`
	IssuedAt string `json:"issued_at"`
	Index    uint64 `json:"log_index"`
	// LogSize is the log's size in the proof's checkpoint.
	LogSize uint64 `json:"log_size"`
}

func runStatus(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket status", statusUsage, stderr)
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		errorf(stderr, "status: unexpected arguments %q", fs.Args())
		return 2
	}
	project, ok := findProject(stderr, "status")
	if !ok {
		return 2
	}
	st, err := readStatus(store.Open(project))
	if err != nil {
		errorf(stderr, "status: %v", err)
		return 2
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(st)
		return 0
	}
	printStatus(stdout, st)
	return 0
}

// readStatus gathers a project's status from its store.
func readStatus(s *store.Store) (projectStatus, error) {
	st := projectStatus{Project: s.Project()}
	cfg, err := s.Config()
	if err != nil {
		return st, err
	}
	st.Log, st.RequireLog, st.Observe, st.Journal = cfg.LogURL, cfg.RequireLog, cfg.Observe, cfg.Journal
	sessions, err := s.Sessions()
	if err != nil {
		return st, err
	}
	st.Sessions = len(sessions)
	var latest time.Time
	for _, name := range sessions {
		chain, err := s.Receipts(name)
		if err != nil {
			return st, err
		}
		st.Receipts += len(chain)
		proofs, err := s.Proofs(name)
		if err != nil {
			return st, err
		}
		seqs := proofs.Sequences()
		st.Proven += len(seqs)
		if len(seqs) == 0 || !cfg.HasLog() {
			continue
		}
		if p, t, ok := latestProof(s, cfg, name, chain, proofs); ok && t.After(latest) {
			latest, st.LatestProven = t, p
			st.LogSize = max(st.LogSize, p.LogSize)
		}
	}
	pend, _, err := s.Pending(store.Cursor{})
	if err != nil {
		return st, err
	}
	st.Pending = len(pend)
	if last, ran, err := s.LastSync(); err != nil {
		return st, err
	} else if ran {
		st.LastSync = &last
	}
	st.Syncing = s.Syncing()
	st.Damaged, err = s.Damaged()
	return st, err
}

// latestProof returns the session's last receipt whose proof verifies
// under the configured log key and witness policy.
func latestProof(s *store.Store, cfg store.Config, name string, chain [][]byte, proofs *store.ProofSet) (*provenReceipt, time.Time, bool) {
	v, err := s.ProofVerifier(cfg)
	if err != nil {
		return nil, time.Time{}, false
	}
	priv, err := s.Key()
	if err != nil {
		return nil, time.Time{}, false
	}
	seqs := proofs.Sequences()
	for i := len(seqs) - 1; i >= 0; i-- {
		seq := seqs[i]
		if seq < 1 || seq > int64(len(chain)) {
			continue
		}
		text, _ := proofs.Get(seq)
		rc, err := receipts.Open(chain[seq-1], nil)
		if err != nil {
			continue
		}
		vp, err := v.VerifyReceipt(priv.Public().(ed25519.PublicKey), chain[seq-1], text)
		if err != nil {
			continue
		}
		t, _ := time.Parse(time.RFC3339Nano, rc.Payload.IssuedAt)
		return &provenReceipt{Session: name, Sequence: seq, Hash: rc.Hash, IssuedAt: rc.Payload.IssuedAt, Index: vp.Index, LogSize: vp.Size}, t, true
	}
	return nil, time.Time{}, false
}

func printStatus(w io.Writer, st projectStatus) {
	fmt.Fprintf(w, "project    %s\n", st.Project)
	switch {
	case st.Log == "":
		fmt.Fprintln(w, "log        none configured: receipts stay local")
	case st.LogSize > 0:
		fmt.Fprintf(w, "log        %s (size %d at the latest proof)\n", st.Log, st.LogSize)
	default:
		fmt.Fprintf(w, "log        %s\n", st.Log)
	}
	var modes []string
	if st.RequireLog {
		modes = append(modes, "strict (require_log)")
	}
	if st.Observe {
		modes = append(modes, "observe")
	}
	if st.Journal {
		modes = append(modes, "journal")
	}
	if len(modes) > 0 {
		fmt.Fprintf(w, "modes      %v\n", modes)
	}
	fmt.Fprintf(w, "sessions   %d\n", st.Sessions)
	fmt.Fprintf(w, "receipts   %d (%d proven, %d pending)\n", st.Receipts, st.Proven, st.Pending)
	if p := st.LatestProven; p != nil {
		fmt.Fprintf(w, "proven     latest: session %s receipt %d (%s), log index %d, issued %s\n", p.Session, p.Sequence, p.Hash, p.Index, p.IssuedAt)
	}
	switch ls := st.LastSync; {
	case ls == nil:
		fmt.Fprintln(w, "last sync  none")
	case ls.Error != "":
		fmt.Fprintf(w, "last sync  %s%s: FAILED: %s (%d pending)\n           fix: %s\n", ago(ls.Time), bgWord(ls.Background), ls.Error, ls.Pending, ls.Fix)
	default:
		fmt.Fprintf(w, "last sync  %s%s: ok, %s stored, %d pending\n", ago(ls.Time), bgWord(ls.Background), plural.Count(ls.Stored, "proof"), ls.Pending)
	}
	for _, d := range st.Damaged {
		fmt.Fprintf(w, "damaged    %s: a chain's torn or damaged tail, kept for inspection\n", d)
	}
	if st.Syncing {
		fmt.Fprintln(w, "syncing    a docket sync is running")
	}
}
