package explorer

import (
	"bytes"
	"context"
	"fmt"
)

// verdict checks the chain of session s from its receipts in the index,
// in chain order (sequence, then log index), whatever order they were
// logged in: sequences 1 to N each once, each receipt's
// previousReceiptHash the hash of the one before, nothing after a
// session_end whose final_sequence and head_hash match the chain. It fills
// in s.Broken (the first break, "" when none), s.LastSeq, s.Ended and
// s.Missing (sequences absent, which a later entry may still bring).
func (e *Explorer) verdict(ctx context.Context, v *view, s *sessionInfo) error {
	if c, ok := e.verdicts.get(v.size, s.ID); ok {
		*s = c
		return nil
	}
	rows, err := e.idx.db.QueryContext(ctx, `SELECT idx, seq, hash, prev, kind, event, coalesce(final, 0), head FROM entries
		WHERE session = ? AND idx < ? ORDER BY seq, idx`, s.ID, v.size)
	if err != nil {
		return err
	}
	defer rows.Close()
	var last struct {
		idx  uint64
		seq  int64
		hash []byte
	}
	ended, n := false, 0
	for ; rows.Next(); n++ {
		var idx uint64
		var seq, final int64
		var hash, prev, head []byte
		var kind, event string
		if err := rows.Scan(&idx, &seq, &hash, &prev, &kind, &event, &final, &head); err != nil {
			return err
		}
		if s.Broken == "" {
			switch {
			case seq < 1:
				s.Broken = fmt.Sprintf("entry %d: a receipt without a sequence", idx)
			case ended:
				s.Broken = fmt.Sprintf("entry %d: sequence %d after the session_end", idx, seq)
			case n > 0 && seq == last.seq:
				s.Broken = fmt.Sprintf("entries %d and %d: two receipts for sequence %d", last.idx, idx, seq)
			case seq > last.seq+1:
				s.Missing = true
				s.Broken = fmt.Sprintf("sequences %d–%d are not in the log (or not yet): entry %d is sequence %d", last.seq+1, seq-1, idx, seq)
			case !bytes.Equal(prev, last.hash):
				s.Broken = fmt.Sprintf("entry %d: previousReceiptHash of sequence %d is not the hash of sequence %d", idx, seq, last.seq)
			case kind == kindLifecycle && event == "session_end":
				if final != seq || !bytes.Equal(head, prev) {
					s.Broken = fmt.Sprintf("entry %d: the session_end's final_sequence or head_hash does not match the chain", idx)
				}
				ended = true
			}
		}
		last.idx, last.seq, last.hash = idx, seq, hash
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.LastSeq, s.Ended = last.seq, ended && s.Broken == ""
	e.verdicts.put(v.size, s.ID, *s)
	return nil
}
