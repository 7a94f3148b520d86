package hook

import (
	"context"
	"errors"
	"fmt"

	"github.com/docketlog/docket/reconcile"
)

// reconcile reads the agent's record of the session the event names
// (transcript_path) and signs an unmediated_call receipt for each call in
// it that no receipt of the chain accounts for (package reconcile). It
// returns the session_end's transcript_hash: the record's hash, or why it
// could not be read; and a note for the user when calls ran without a
// decision. An error is a receipt that could not be signed: the event is
// then spooled and reconciled again later.
func (opts Options) reconcile(ctx context.Context, ev *Event) (hash, note string, err error) {
	if ev.TranscriptPath == "" {
		return reconcile.Unreadable(errors.New("the hook event names no transcript_path")), "", nil
	}
	rec, err := reconcile.Read(ctx, opts.Agent.ReceiptName(), ev.TranscriptPath)
	if err != nil {
		opts.Logger.Warn("transcript unreadable", "session", ev.SessionID, "err", err)
		return reconcile.Unreadable(err), "", nil
	}
	key, err := opts.Store.Key()
	if err != nil {
		return "", "", err
	}
	if opts.Kind == Stop {
		rec.Calls = reconcile.Finished(rec.Calls) // the others may be in flight
	}
	s := reconcile.Session{Store: opts.Store, Key: key, ID: ev.SessionID, Agent: opts.Agent.ReceiptName()}
	missing, err := s.Reconcile(rec)
	if err != nil {
		return "", "", err
	}
	if len(missing) > 0 {
		opts.Logger.Warn("unmediated calls", "session", ev.SessionID, "count", len(missing))
		note = fmt.Sprintf("%d tool calls in the agent's transcript have no decision of the gate (first: %s at %s); signed as unmediated_call receipts",
			len(missing), missing[0].Tool, missing[0].Position)
	}
	return rec.TranscriptHash(), note, nil
}
