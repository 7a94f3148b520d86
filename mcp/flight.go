package mcp

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
	"github.com/docketlog/docket/telemetry"
)

// maxFlights bounds the client's requests in flight; a request over it is
// refused.
const maxFlights = 10_000

// A flight is a client request the relay forwarded (or is deciding) and
// whose response it waits for.
type flight struct {
	method string // tools/call, tools/list, initialize, …
	// forwarded is set once the request is being written to the server:
	// only then may a response answer it.
	forwarded bool
	// cursor is set for a tools/list request for a later page.
	cursor bool
	// For a decided call (tools/call, or a gated request): what its
	// execution receipt records; tool is "" for any other request.
	tool, toolUseID, inputHash string
	decision                   *store.Pending // the allow it executes, set before it is forwarded
	// span is the call's span while it runs (a tools/call, with
	// Config.Telemetry set).
	span *telemetry.ToolCall
	// own is set for the relay's own tools/list (fetchTools): its
	// response is read, not relayed, and done closed.
	own  bool
	done chan struct{}
	next string // the response's nextCursor
}

// flights is the in-flight table, keyed by the JCS form of the request
// id. Both loops use it; its methods are safe for concurrent use.
type flights struct {
	mu sync.Mutex // guards m
	m  map[string]*flight
}

var (
	errInFlight   = errors.New("a request with this id is already in flight")
	errTooMany    = errors.New("too many requests in flight")
	errNotForward = errors.New("the request is no longer in flight")
)

// add registers a request that is not forwarded yet.
func (t *flights) add(key string, f *flight) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*flight{}
	}
	if _, dup := t.m[key]; dup {
		return errInFlight
	}
	if len(t.m) >= maxFlights {
		return errTooMany
	}
	t.m[key] = f
	return nil
}

// forward marks a request as written to the server from now on, with the
// decision its execution links (nil for requests other than tools/call).
func (t *flights) forward(key string, decision *store.Pending) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[key]
	if f == nil {
		return errNotForward
	}
	f.forwarded, f.decision = true, decision
	return nil
}

// answer removes and returns the flight a response answers: one that was
// forwarded. A response to any other id answers nothing (nil): the
// request was never forwarded (denied, or still being decided), was
// already answered, or never existed.
func (t *flights) answer(key string) *flight {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[key]
	if f == nil || !f.forwarded {
		return nil
	}
	delete(t.m, key)
	return f
}

// remove removes a flight whatever its state (a call denied or cancelled).
func (t *flights) remove(key string) *flight {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.m[key]
	delete(t.m, key)
	return f
}

// drain removes every flight (the server is gone) and returns the
// tools/call ones that were forwarded.
func (t *flights) drain() []*flight {
	t.mu.Lock()
	defer t.mu.Unlock()
	var calls []*flight
	for k, f := range t.m {
		switch {
		case f.own:
			close(f.done) // fetchTools waits for it no longer
		case f.tool != "" && f.forwarded:
			calls = append(calls, f)
		}
		delete(t.m, k)
	}
	return calls
}

// cancelled records the end of a call the client cancelled.
func (r *relay) cancelled(idv, reason any) {
	id := idKey(idv)
	if id == nil {
		return
	}
	f := r.flights.answer(string(id))
	if f == nil || f.tool == "" {
		return
	}
	why, _ := reason.(string)
	out, _ := receipts.HashJSON(map[string]any{"cancelled": why})
	r.record(f, receipts.PostToolUseFailure, receipts.ReasonCancelled, out)
}

// serverGone records every call still in flight as ended by the server's
// exit and returns how many there were.
func (r *relay) serverGone() int {
	calls := r.flights.drain()
	out, _ := receipts.HashJSON(map[string]any{"server_exited": true})
	for _, f := range calls {
		r.record(f, receipts.PostToolUseFailure, receipts.ReasonServerExited, out)
	}
	return len(calls)
}

// record appends the execution receipt of a call, linked to the decision
// the flight holds. It runs after the response is relayed.
func (r *relay) record(f *flight, event, reason, outputHash string) {
	var rec gate.Recorded
	err := r.append(func() error {
		// An ended ctx does not stop a record (gate.Gate.Record).
		var err error
		rec, err = r.cfg.Gate.Record(context.Background(), gate.Event{HookEvent: event, SessionID: r.cfg.SessionID, Agent: r.agent,
			ToolName: f.tool, ToolUseID: f.toolUseID, ToolInputHash: f.inputHash, ToolOutputHash: outputHash, Reason: reason,
			Decision: f.decision, Confinement: r.cfg.Confinement})
		return err
	})
	if err != nil {
		r.log.Error("mcp: recording an execution failed", "tool", f.tool, "err", err)
	}
	if f.span != nil {
		f.span.End = time.Now()
		f.span.Execution, _ = receipts.Hash(rec.Receipt)
		if event == receipts.PostToolUseFailure {
			f.span.ErrorType = "tool_error"
			if reason != "" {
				f.span.ErrorType = reason
			}
		}
		r.cfg.Telemetry.Record(*f.span)
	}
}
