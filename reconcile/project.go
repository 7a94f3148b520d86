package reconcile

import (
	"context"
	"crypto/ed25519"
	"fmt"

	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// A Report is what reconciling one record after the fact found.
type Report struct {
	// File is the record read; Session the session it names.
	File, Session string
	// Unmediated are the calls signed as unmediated_call receipts now.
	Unmediated []Call
	// Ended is set when the session had no session_end and one was signed
	// with the record's transcript_hash.
	Ended bool
	// Changed, for a session that had ended, says how the record differs
	// from the transcript_hash its session_end fixed (edited after the
	// fact, or read then and not now); "" when it agrees.
	Changed string
	// Late are the calls of an ended session's record that no receipt
	// accounts for: reported, not signed (nothing follows a session_end).
	Late []Call
}

// Project reconciles records of agent after the fact (docket reconcile),
// for sessions that ran no hook at all, or whose end was never recorded:
// for each record it reads the session chain of the session the record
// names; a session that has not ended gets an unmediated_call receipt for
// each call no receipt accounts for, and then end signs its session_end
// with the record's transcript_hash. An ended session is compared with its
// session_end instead, and nothing is signed.
func Project(ctx context.Context, st *store.Store, key ed25519.PrivateKey, agent string, files []string,
	end func(session, transcriptHash string) error) ([]Report, error) {
	var out []Report
	for _, f := range files {
		rec, err := Read(ctx, agent, f)
		if err != nil {
			return out, err
		}
		if rec.SessionID == "" {
			return out, fmt.Errorf("%s names no session", f)
		}
		r := Report{File: f, Session: rec.SessionID}
		s := Session{Store: st, Key: key, ID: rec.SessionID, Agent: agent}
		chain, err := s.Chain()
		if err != nil {
			return out, err
		}
		if e := sessionEnd(chain); e != nil {
			if e.TranscriptHash != rec.TranscriptHash() {
				r.Changed = fmt.Sprintf("the record's hash is %s; its session_end (sequence %d) fixed %q", rec.TranscriptHash(), e.Sequence, e.TranscriptHash)
			}
			r.Late = Match(rec.Calls, chain)
			out = append(out, r)
			continue
		}
		if r.Unmediated, err = s.Reconcile(rec); err != nil {
			return out, err
		}
		if err := end(rec.SessionID, rec.TranscriptHash()); err != nil {
			return out, fmt.Errorf("ending session %q: %w", rec.SessionID, err)
		}
		r.Ended = true
		out = append(out, r)
	}
	return out, nil
}

// sessionEnd returns chain's session_end, or nil.
func sessionEnd(chain []receipts.Payload) *receipts.Payload {
	for i := range chain {
		if chain[i].LifecycleEvent == receipts.LifecycleSessionEnd {
			return &chain[i]
		}
	}
	return nil
}
