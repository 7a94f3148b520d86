package audit

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"

	f_log "github.com/transparency-dev/formats/log"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
)

// ErrNotProven is returned by VerifyEvidence when the evidence is well formed
// but does not, on its own, prove misbehaviour.
var ErrNotProven = errors.New("evidence does not prove misbehaviour on its own")

// ErrBadEvidence is returned by VerifyEvidence when the evidence does not
// check out: a signature, proof or entry in it is wrong.
var ErrBadEvidence = errors.New("evidence does not verify")

// VerifyEvidence checks evidence with the log's public key alone. It returns
// what the evidence proves, or an error wrapping ErrNotProven or
// ErrBadEvidence. Evidence of a kind it does not know is bad evidence: what
// it would prove cannot be decided.
func VerifyEvidence(ev *Evidence, logKey note.Verifier) (string, error) {
	if ev.Kind == KindFork || ev.Kind == KindWitnessSplitView {
		return verifyFork(ev, logKey)
	}
	cp, err := parseCheckpoint(ev.Checkpoint, logKey)
	if err != nil {
		return "", err
	}
	entries := make([]*receipts.Entry, len(ev.Entries))
	entryErrs := make([]error, len(ev.Entries))
	leaves := make([][]byte, len(ev.Entries))
	for i, e := range ev.Entries {
		if leaves[i], err = e.Bytes(); err != nil {
			return "", err
		}
		lh := leafHash(leaves[i])
		if ev.Kind == KindRootMismatch {
			if lh, err = base64.StdEncoding.DecodeString(ev.TreeLeafHash); err != nil {
				return "", fmt.Errorf("%w: tree_leaf_hash: %v", ErrBadEvidence, err)
			}
		}
		hashes, err := unb64s(e.InclusionProof)
		if err != nil {
			return "", err
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, e.Index, cp.Size, lh, hashes, cp.Hash); err != nil {
			return "", fmt.Errorf("%w: entry %d is not included in the checkpoint of size %d: %v", ErrBadEvidence, e.Index, cp.Size, err)
		}
		entries[i], entryErrs[i] = receipts.ParseEntry(leaves[i])
	}
	need := func(n int) error {
		if len(entries) != n {
			return fmt.Errorf("%w: %s evidence has %d entries, want %d", ErrBadEvidence, ev.Kind, len(entries), n)
		}
		for i := range n {
			if entryErrs[i] != nil && ev.Kind != KindBadEntry && ev.Kind != KindRootMismatch {
				return fmt.Errorf("%w: entry %d: %v", ErrBadEvidence, ev.Entries[i].Index, entryErrs[i])
			}
		}
		return nil
	}
	switch ev.Kind {
	case KindBadEntry:
		if err := need(1); err != nil {
			return "", err
		}
		if entryErrs[0] == nil {
			return "", fmt.Errorf("%w: entry %d is a valid Docket entry", ErrNotProven, ev.Entries[0].Index)
		}
		return fmt.Sprintf("the log holds at index %d, under its signed checkpoint of size %d, an entry it should have refused: %v", ev.Entries[0].Index, cp.Size, entryErrs[0]), nil
	case KindRootMismatch:
		if len(ev.Entries) != 1 {
			return "", fmt.Errorf("%w: root_mismatch evidence has %d entries, want 1", ErrBadEvidence, len(ev.Entries))
		}
		if bytes.Equal(leafHash(leaves[0]), mustB64(ev.TreeLeafHash)) {
			return "", fmt.Errorf("%w: the served entry is the one the tree holds", ErrNotProven)
		}
		return fmt.Sprintf("the log served at index %d an entry that its signed tree of size %d does not hold there", ev.Entries[0].Index, cp.Size), nil
	case KindEquivocation:
		if err := need(2); err != nil {
			return "", err
		}
		a, b := payloadOf(entries[0]), payloadOf(entries[1])
		if entries[0].KID != entries[1].KID || bytes.Equal(entries[0].Receipt, entries[1].Receipt) {
			return "", fmt.Errorf("%w: not two different receipts of one issuer", ErrNotProven)
		}
		sameSeq := a.Sequence > 0 && entries[0].SessionID == entries[1].SessionID && a.Sequence == b.Sequence
		sameIssuerSeq := a.IssuerSequence > 0 && a.IssuerSequence == b.IssuerSequence
		if !sameSeq && !sameIssuerSeq {
			return "", fmt.Errorf("%w: the receipts do not share a sequence", ErrNotProven)
		}
		return fmt.Sprintf("issuer %s signed two different receipts for one position (session %q sequence %d, issuer_sequence %d / %d), both in the log at %d and %d",
			entries[0].KID, entries[1].SessionID, b.Sequence, a.IssuerSequence, b.IssuerSequence, ev.Entries[0].Index, ev.Entries[1].Index), nil
	case KindChainBreak:
		if err := need(2); err != nil {
			return "", err
		}
		a, b := payloadOf(entries[0]), payloadOf(entries[1])
		if entries[0].KID != entries[1].KID || entries[0].SessionID != entries[1].SessionID || a.Sequence+1 != b.Sequence || b.PreviousReceiptHash == receipts.ChainHash(entries[0].Receipt) {
			return "", fmt.Errorf("%w: the receipts are not consecutive unlinked receipts of one session", ErrNotProven)
		}
		return fmt.Sprintf("session %q: logged receipt %d does not link logged receipt %d", entries[1].SessionID, b.Sequence, a.Sequence), nil
	case KindExecutedDeny, KindUnlinkedExecution:
		if len(entries) != 2 {
			return "", fmt.Errorf("%w: %d entries: an execution alone does not show what it lacks", ErrNotProven, len(entries))
		}
		if err := need(2); err != nil {
			return "", err
		}
		d, x := payloadOf(entries[0]), payloadOf(entries[1])
		if !isExecution(&Record{Payload: x}) || x.DecisionReceiptHash != receipts.ChainHash(entries[0].Receipt) || entries[0].KID != entries[1].KID {
			return "", fmt.Errorf("%w: the second entry is not an execution of the first", ErrNotProven)
		}
		if ev.Kind == KindExecutedDeny && d.Decision == receipts.Deny && !d.Unenforced {
			return fmt.Sprintf("session %q: execution %d executes the deny decision %d", entries[1].SessionID, x.Sequence, d.Sequence), nil
		}
		if ev.Kind == KindUnlinkedExecution && (entries[0].SessionID != entries[1].SessionID || d.Sequence >= x.Sequence || d.ToolInputHash != x.ToolInputHash || d.ToolName != x.ToolName) {
			return fmt.Sprintf("session %q: execution %d does not execute an earlier decision on the same call", entries[1].SessionID, x.Sequence), nil
		}
		return "", fmt.Errorf("%w: the execution and decision agree", ErrNotProven)
	case KindWithheld:
		if err := need(1); err != nil {
			return "", err
		}
		return fmt.Sprintf("issuer %s's receipt (session %q) is in the log at index %d under its signed checkpoint of size %d; whoever presented the issuer's receipts without it withheld it",
			entries[0].KID, entries[0].SessionID, ev.Entries[0].Index, cp.Size), nil
	case KindIssuerSequenceGap, KindBelowHighWater, KindDropped, KindOpenSession, KindUndecidedLegacy, KindInvalidReceipt, KindStaleLog:
		return "", fmt.Errorf("%w: a %s finding is an absence, which only a scan of the log to size %d shows; the entries here are in the log", ErrNotProven, ev.Kind, cp.Size)
	case KindUnknownIssuer, KindDenyDecision:
		return "", fmt.Errorf("%w: a %s finding depends on the monitor's configuration; the entries here are in the log", ErrNotProven, ev.Kind)
	default:
		return "", fmt.Errorf("%w: unknown kind %q", ErrBadEvidence, ev.Kind)
	}
}

func verifyFork(ev *Evidence, logKey note.Verifier) (string, error) {
	if len(ev.Checkpoints) != 2 {
		return "", fmt.Errorf("%w: fork evidence has %d checkpoints, want 2", ErrBadEvidence, len(ev.Checkpoints))
	}
	a, err := parseCheckpoint(ev.Checkpoints[0], logKey)
	if err != nil {
		return "", err
	}
	b, err := parseCheckpoint(ev.Checkpoints[1], logKey)
	if err != nil {
		return "", err
	}
	if a.Size > b.Size {
		a, b = b, a
	}
	if a.Size == b.Size {
		if bytes.Equal(a.Hash, b.Hash) {
			return "", fmt.Errorf("%w: the checkpoints are of the same tree", ErrNotProven)
		}
		return fmt.Sprintf("the log signed two different roots for size %d", a.Size), nil
	}
	forked, err := proveFork(a.Size, a.Hash, b.Size, b.Hash, ev.ConsistencyProof)
	if err != nil {
		return "", err
	}
	if !forked {
		return "", fmt.Errorf("%w: the checkpoints are consistent", ErrNotProven)
	}
	return fmt.Sprintf("the log's tree of size %d does not extend its tree of size %d: the path from the larger tree gives the smaller a root other than the one the log signed", b.Size, a.Size), nil
}

func parseCheckpoint(text string, logKey note.Verifier) (*f_log.Checkpoint, error) {
	cp, _, _, err := f_log.ParseCheckpoint([]byte(text), logKey.Name(), logKey)
	if err != nil {
		return nil, fmt.Errorf("%w: checkpoint: %v", ErrBadEvidence, err)
	}
	return cp, nil
}

func payloadOf(e *receipts.Entry) Payload { return payloadFrom(e.Payload) }

func unb64s(ss []string) ([][]byte, error) {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != 32 {
			return nil, fmt.Errorf("%w: proof hash %d is not 32 bytes of base64", ErrBadEvidence, i)
		}
		out[i] = b
	}
	return out, nil
}

func mustB64(s string) []byte {
	b, _ := base64.StdEncoding.DecodeString(s)
	return b
}

// ParseEvidence reads an evidence file. It refuses a file with two members
// whose names differ only in case, or a member evidence does not define:
// a file must say one thing to every reader.
func ParseEvidence(b []byte) (*Evidence, error) {
	var ev Evidence
	if err := strictjson.Unmarshal(b, &ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadEvidence, err)
	}
	if ev.Kind == "" {
		return nil, fmt.Errorf("%w: no kind", ErrBadEvidence)
	}
	return &ev, nil
}
