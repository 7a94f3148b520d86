package explorer

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/docketlog/docket/audit"
)

// An issuerTally is an issuer's summary (what `docket verify-index`
// concludes of its index) kept up to date as the verified prefix grows: an
// issuer page reads only the issuer's entries verified since the tally's
// size, through the index on (issuer, idx), rather than counting all of
// them again (~0.2 s for 125,000 entries) each time a chunk lands while
// the explorer catches up.
//
// The runs of issuer_sequence present are kept, at most maxRuns of them:
// an issuer whose sequences leave more holes than that (a hostile log) is
// summarised by counting its rows in the database, as it was before.
type issuerTally struct {
	mu      sync.Mutex // guards the rest
	size    uint64     // the verified size it covers: the entries [0, size)
	entries int
	legacy  int   // entries without an issuer_sequence
	hw      int64 // the highest issuer_high_water of an issuer_checkpoint
	runs    []seqRun
	tooMany bool // more than maxRuns runs: count in the database
}

// A seqRun is the issuer_sequences lo to hi, all present.
type seqRun struct{ lo, hi int64 }

// maxRuns bounds the runs an issuerTally keeps (16 bytes each).
const maxRuns = 4096

// tallies holds the issuers' tallies, at most cacheSize of them: a full
// map is emptied and refilled.
type tallies struct {
	mu sync.Mutex // guards m
	m  map[int64]*issuerTally
}

func (ts *tallies) get(issuer int64) *issuerTally {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t := ts.m[issuer]; t != nil {
		return t
	}
	if ts.m == nil || len(ts.m) >= cacheSize {
		ts.m = map[int64]*issuerTally{}
	}
	t := &issuerTally{}
	ts.m[issuer] = t
	return t
}

// add counts one entry of the issuer.
func (t *issuerTally) add(iseq, hw int64) {
	t.entries++
	if iseq <= 0 {
		t.legacy++
		return
	}
	t.hw = max(t.hw, hw)
	if t.tooMany {
		return
	}
	// The first run that ends at iseq-1 or later (sequences mostly come
	// in order: then it is past the last run, or the last run).
	i := len(t.runs)
	if i == 0 || t.runs[i-1].hi >= iseq-1 {
		i, _ = slices.BinarySearchFunc(t.runs, iseq-1, func(r seqRun, v int64) int { return cmp.Compare(r.hi, v) })
	}
	switch {
	case i < len(t.runs) && t.runs[i].lo <= iseq && iseq <= t.runs[i].hi:
		// Already present: a second entry with this sequence.
	case i < len(t.runs) && t.runs[i].hi == iseq-1:
		t.runs[i].hi = iseq
		if i+1 < len(t.runs) && t.runs[i+1].lo == iseq+1 {
			t.runs[i].hi = t.runs[i+1].hi
			t.runs = slices.Delete(t.runs, i+1, i+2)
		}
	case i < len(t.runs) && t.runs[i].lo == iseq+1:
		t.runs[i].lo = iseq
	default:
		if len(t.runs) >= maxRuns {
			t.tooMany, t.runs = true, nil
			return
		}
		t.runs = slices.Insert(t.runs, i, seqRun{iseq, iseq})
	}
}

// summary is the tally as `docket verify-index` reports it, with at most
// gapsShown runs of missing sequences and how many more there are.
func (t *issuerTally) summary() (*audit.IndexSummary, int) {
	s := &audit.IndexSummary{Entries: t.entries, Legacy: t.legacy, HighWater: t.hw}
	more := 0
	var prev, distinct int64
	for _, r := range t.runs {
		if r.lo > prev+1 {
			if len(s.Gaps) < gapsShown {
				s.Gaps = append(s.Gaps, audit.Gap{From: prev + 1, To: r.lo - 1})
			} else {
				more++
			}
		}
		prev, distinct = r.hi, distinct+r.hi-r.lo+1
	}
	s.Complete = distinct
	if len(s.Gaps) > 0 {
		s.Complete = s.Gaps[0].From - 1
	}
	return s, more
}

// catchUp adds the issuer's entries [t.size, size) from the index.
func (t *issuerTally) catchUp(ctx context.Context, x *index, issuer int64, size uint64) error {
	if size <= t.size {
		return nil
	}
	rows, err := x.db.QueryContext(ctx, `SELECT coalesce(iseq, 0), CASE WHEN event = 'issuer_checkpoint' THEN coalesce(hw, 0) ELSE 0 END
		FROM entries WHERE issuer = ? AND idx >= ? AND idx < ? ORDER BY idx`, issuer, t.size, size)
	if err != nil {
		return err
	}
	defer rows.Close()
	// A tally half updated is thrown away: the next page starts again.
	fail := func(err error) error {
		t.size, t.entries, t.legacy, t.hw, t.runs, t.tooMany = 0, 0, 0, 0, nil, false
		return err
	}
	for rows.Next() {
		var iseq, hw int64
		if err := rows.Scan(&iseq, &hw); err != nil {
			return fail(err)
		}
		t.add(iseq, hw)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	t.size = size
	return nil
}
