package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/receipts"
)

// Suffixes of the files a chain's damaged or torn tail is moved to, beside
// the chain: kept for whoever investigates, never read back as a chain.
const (
	tornSuffix    = ".torn"
	damagedSuffix = ".damaged"
)

// LifecycleRepaired is the lifecycle_event of the receipt Repair signs
// after it moved a damaged tail aside: the chain says it was repaired, and
// what was moved (reason: its size and SHA-256), so an auditor sees it.
const LifecycleRepaired = "chain_repaired"

// A BadTailError is a chain whose last line is not a receipt: every append
// to the session fails until it is repaired (docket repair SESSION).
type BadTailError struct {
	Chain   string // the chain file
	Session string
	Err     error
}

func (e *BadTailError) Error() string {
	return fmt.Sprintf("%s: the last line is not a receipt (%v); every later call of session %s is refused until it is repaired: docket repair %s",
		e.Chain, e.Err, e.Session, e.Session)
}

func (e *BadTailError) Unwrap() error { return ErrChainCorrupt }

func badTail(chain string, err error) error {
	return &BadTailError{Chain: chain, Session: strings.TrimSuffix(filepath.Base(chain), ".jsonl"), Err: err}
}

// keepTorn appends the torn tail of a chain to the chain's .torn file.
func keepTorn(chain string, torn []byte) error {
	f, err := os.OpenFile(chain+tornSuffix, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(append(append([]byte(nil), torn...), '\n')); err != nil {
		return err
	}
	return f.Sync()
}

// Damaged returns the files beside the chains that hold a torn or
// damaged tail (docket status and doctor report them).
func (s *Store) Damaged() ([]string, error) {
	var out []string
	for _, suffix := range []string{tornSuffix, damagedSuffix + "-*"} {
		m, err := filepath.Glob(filepath.Join(s.dir, SessionsDir, "*.jsonl"+suffix))
		if err != nil {
			return nil, err
		}
		out = append(out, m...)
	}
	return out, nil
}

// A Repair says what Repair did.
type Repair struct {
	// Kept is the number of receipts kept; MovedTo the file the damaged
	// tail was moved to, with MovedBytes of it; Sequence the sequence of
	// the chain_repaired receipt.
	Kept       int
	MovedTo    string
	MovedBytes int
	Sequence   int64
}

// ErrNothingToRepair: the chain ends in a receipt that links to the one
// before it.
var ErrNothingToRepair = errors.New("the chain has no damaged tail")

// Repair moves a session's damaged tail aside: the lines from the first one
// that is not a receipt continuing the chain (its sequence the next, its
// previousReceiptHash the last one's hash) to the end go to a .damaged-
// file beside the chain, and a chain_repaired lifecycle receipt, signed
// with the issuer key, records it (the size and SHA-256 of what was moved).
func (s *Store) Repair(session string) (Repair, error) {
	var r Repair
	key, err := s.Key()
	if err != nil {
		return r, fmt.Errorf("issuer key: %w", err)
	}
	path := s.ChainPath(session)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return r, fmt.Errorf("reading chain: %w", err)
	}
	defer f.Close()
	if err := durable.Lock(f); err != nil {
		return r, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	good, prev, seq, sid := 0, "", int64(0), session
	for len(data[good:]) > 0 {
		line, _, ok := bytes.Cut(data[good:], []byte("\n"))
		if !ok {
			break // a torn last line
		}
		rc, err := receipts.Open(bytes.TrimSpace(line), nil)
		if err != nil || rc.Payload.Sequence != seq+1 || rc.Payload.PreviousReceiptHash != prev && seq > 0 {
			break
		}
		prev, seq, sid = rc.Hash, rc.Payload.Sequence, rc.Payload.SessionID
		good += len(line) + 1
		r.Kept++
	}
	tail := data[good:]
	if len(tail) == 0 {
		return r, ErrNothingToRepair
	}
	sum := sha256.Sum256(tail)
	r.MovedTo = fmt.Sprintf("%s%s-%d", path, damagedSuffix, time.Now().UnixNano())
	r.MovedBytes = len(tail)
	if err := durable.Create(r.MovedTo, tail, 0o600); err != nil {
		return r, err
	}
	if err := f.Truncate(int64(good)); err != nil {
		return r, err
	}
	if err := f.Sync(); err != nil {
		return r, err
	}
	f.Close() // Append takes the chain's lock
	why := fmt.Sprintf("damaged tail moved aside: %d bytes, sha256:%s, to %s", len(tail), hex.EncodeToString(sum[:]), filepath.Base(r.MovedTo))
	head, err := s.Append(session, AppendOptions{}, func(l Link) ([]byte, error) {
		return receipts.Sign(key, receipts.Payload{Type: receipts.TypeLifecycle, SessionID: sid, Sequence: l.Sequence,
			PreviousReceiptHash: l.Previous, IssuerSequence: l.IssuerSequence, LifecycleEvent: LifecycleRepaired, Reason: why})
	})
	if err != nil {
		return r, fmt.Errorf("signing the repair: %w", err)
	}
	r.Sequence = head.Sequence
	return r, nil
}
