// Package disclosure proves to a third party what the input of one logged
// tool call was, and nothing else: a disclosure holds one receipt, the
// exact input whose hash (tool_input_hash) or salted commitment
// (tool_input_commitment, with its salt) the receipt carries, and the
// receipt's tlog-proof. Make writes it from a project's store and journal;
// Verify checks it with the issuer's key and, given a proof verifier, the
// log's key and witness quorum.
package disclosure

import (
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// Type is the type member of a disclosure.
const Type = "docket-disclosure/v1"

// MaxSize bounds a disclosure Verify reads: the journal's largest input,
// escaped, plus a receipt and a proof.
const MaxSize = 8*store.MaxJournalInput + 2<<20

// A Disclosure is the file `docket disclose` writes.
type Disclosure struct {
	Type string `json:"type"`
	// Receipt is the decision receipt, exactly as its chain holds it.
	Receipt json.RawMessage `json:"receipt"`
	// ToolInput is the call's input, JCS.
	ToolInput json.RawMessage `json:"tool_input"`
	// Salt is the hex salt of a tool_input_commitment; absent for a
	// receipt with tool_input_hash.
	Salt string `json:"salt,omitempty"`
	// Proof is the receipt's tlog-proof@v1, when the project has it.
	Proof string `json:"proof,omitempty"`
}

// Errors of Make and Verify.
var (
	ErrNotFound = errors.New("no receipt with that hash")
	ErrNoInput  = errors.New("the journal does not hold the input of that receipt")
	// ErrMismatch: the input does not hash (or commit) to the receipt's.
	ErrMismatch = errors.New("the input does not match the receipt")
	// ErrBadProof: the log proof does not show the receipt in the log.
	ErrBadProof = errors.New("log proof does not verify")
)

// Make returns the disclosure of the receipt whose chain hash is hash
// ("sha256:<hex>", or a unique prefix of its hex) in the store s.
func Make(s *store.Store, hash string) (*Disclosure, error) {
	want := strings.TrimPrefix(strings.ToLower(hash), "sha256:")
	if len(want) < 8 {
		return nil, fmt.Errorf("receipt hash %q: give at least 8 hex digits", hash)
	}
	sessions, err := s.Sessions()
	if err != nil {
		return nil, err
	}
	var found *receipts.Receipt
	var raw []byte
	var session string
	for _, name := range sessions {
		chain, err := s.Receipts(name)
		if err != nil {
			return nil, err
		}
		for _, line := range chain {
			rc, err := receipts.Open(line, nil)
			if err != nil || !strings.HasPrefix(strings.TrimPrefix(rc.Hash, "sha256:"), want) {
				continue
			}
			if found != nil && found.Hash != rc.Hash {
				return nil, fmt.Errorf("receipt hash %q is ambiguous: give more digits", hash)
			}
			found, raw, session = rc, line, name
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%w %s", ErrNotFound, hash)
	}
	d := &Disclosure{Type: Type, Receipt: raw}
	for e, err := range s.Journal(session) {
		if err != nil || e.ReceiptHash != found.Hash {
			continue
		}
		if e.ToolInput == nil {
			return nil, fmt.Errorf("%w (%s, %d bytes)", ErrNoInput, e.Omitted, e.InputSize)
		}
		d.ToolInput, d.Salt = e.ToolInput, e.Salt
	}
	if d.ToolInput == nil {
		return nil, fmt.Errorf("%w %s (docket init -journal keeps inputs from then on)", ErrNoInput, found.Hash)
	}
	if proofs, err := s.Proofs(session); err == nil {
		if p, ok := proofs.Get(found.Payload.Sequence); ok {
			d.Proof = string(p)
		}
	}
	if err := check(d, found); err != nil {
		return nil, err
	}
	return d, nil
}

// Marshal returns the disclosure as a JSON document.
func (d *Disclosure) Marshal() []byte {
	b, _ := json.MarshalIndent(d, "", "  ")
	return append(b, '\n')
}

// A Verified disclosure: the receipt (verified under a trusted key), the
// input it commits to, and where the log holds it.
type Verified struct {
	Receipt *receipts.Receipt
	Input   json.RawMessage
	// Proof is what the proof established, nil when no proof verifier
	// was given.
	Proof *c2sp.VerifiedProof
}

// Verify checks a disclosure: the receipt verifies under keys, its input
// hashes (or, with the salt, commits) to the receipt's, and — with v —
// the proof shows the receipt in the log under a checkpoint the log signed
// and the witness quorum cosigned. An error from receipts.Open is an
// *receipts.OpenError.
func Verify(data []byte, keys *receipts.KeySet, v *c2sp.ProofVerifier) (*Verified, error) {
	if keys == nil {
		return nil, errors.New("no trusted issuer key: a disclosure is checked against the issuer's key")
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("disclosure larger than %d bytes", MaxSize)
	}
	obj, err := strictjson.ParseObject(data)
	if err != nil {
		return nil, fmt.Errorf("disclosure: %w", err)
	}
	var d Disclosure
	var input any
	input, hasInput := obj["tool_input"]
	receipt, hasReceipt := obj["receipt"]
	delete(obj, "tool_input")
	delete(obj, "receipt")
	if err := strictjson.Decode(obj, &d, strictjson.DisallowUnknown); err != nil {
		return nil, fmt.Errorf("disclosure: %w", err)
	}
	if d.Type != Type || !hasInput || !hasReceipt {
		return nil, fmt.Errorf("disclosure: not a %s (type, receipt and tool_input are required)", Type)
	}
	if d.ToolInput, err = strictjson.Canonicalize(input); err != nil {
		return nil, fmt.Errorf("disclosure: tool_input: %w", err)
	}
	if d.Receipt, err = strictjson.Canonicalize(receipt); err != nil {
		return nil, fmt.Errorf("disclosure: receipt: %w", err)
	}
	rc, err := receipts.Open(d.Receipt, keys)
	if err != nil {
		return nil, err
	}
	if err := check(&d, rc); err != nil {
		return nil, err
	}
	out := &Verified{Receipt: rc, Input: d.ToolInput}
	if v != nil {
		if d.Proof == "" {
			return nil, errors.New("the disclosure has no log proof")
		}
		if out.Proof, err = v.VerifyReceipt(rc.Key, d.Receipt, []byte(d.Proof)); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadProof, err)
		}
	}
	return out, nil
}

// check checks that the disclosure's input is the receipt's.
func check(d *Disclosure, rc *receipts.Receipt) error {
	p := rc.Payload
	switch {
	case p.ToolInputCommitment != "":
		salt, err := hex.DecodeString(d.Salt)
		if err != nil || len(salt) != receipts.SaltSize {
			return fmt.Errorf("%w: the receipt carries a tool_input_commitment and the salt is missing or malformed", ErrMismatch)
		}
		if !equal(receipts.InputCommitment(salt, d.ToolInput), p.ToolInputCommitment) {
			return fmt.Errorf("%w: the salted input does not commit to tool_input_commitment %s", ErrMismatch, p.ToolInputCommitment)
		}
	case p.ToolInputHash != "":
		if d.Salt != "" {
			return fmt.Errorf("%w: a salt for a receipt with tool_input_hash", ErrMismatch)
		}
		if !equal(receipts.InputHash(d.ToolInput), p.ToolInputHash) {
			return fmt.Errorf("%w: the input does not hash to tool_input_hash %s", ErrMismatch, p.ToolInputHash)
		}
	default:
		return fmt.Errorf("%w: the receipt commits to no input", ErrMismatch)
	}
	return nil
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }
