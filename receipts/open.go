package receipts

import (
	"crypto/ed25519"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/docketlog/docket/internal/strictjson"
)

// A Receipt is a draft-04 receipt as Open reads it: the typed payload and
// what the signature says.
type Receipt struct {
	Payload Payload
	// Extra holds the payload members Payload has no field for, as
	// strictjson.Parse returns them: signed and kept, not interpreted. It
	// must not be modified.
	Extra map[string]any
	KID   string
	// Signature is the Ed25519 signature over the JCS form of the payload.
	Signature []byte
	// Hash is the receipt's chain hash, "sha256:" + hex SHA-256 of its JCS
	// form: the next receipt's previousReceiptHash.
	Hash string
	// Key is the trusted key the signature verified with; nil when Open
	// was given no keys.
	Key ed25519.PublicKey
}

// An OpenError is why Open refused a receipt, as a verification Result:
// Outcome is Invalid or Undecidable, Cause one of the Cause constants.
type OpenError struct {
	Result Result
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("receipt %v: %s: %s", e.Result.Outcome, e.Result.Cause, e.Result.Detail)
}

// Open reads a Docket receipt (the draft-04 envelope, DESIGN §3.1) and, with
// keys, verifies it as Verify does with Options{Keys: keys}. It is how a
// receipt is read: one strict parse (duplicate and case-folded member names
// refused), one byte form (nothing the signature does not cover), and each
// member DESIGN §3.1 names decoded into Payload by its exact name and type.
//
// A payload member that is not Payload's is kept in Extra, as Verify keeps
// it; one whose name folds like a Payload member's without being it, or one
// of Payload's with the wrong type, is refused, since a reader that decodes
// into a struct would take it otherwise. Other receipt shapes are refused
// as unknown_shape: Verify reads them.
//
// With nil keys Open checks neither signature nor key: it is for a caller
// that reads receipts it signed itself or verified before (a store reading
// its own chains, VerifyChain's caller), and Receipt.Key is then nil. The
// error is an *OpenError.
func Open(data []byte, keys *KeySet) (*Receipt, error) {
	rc, cause, detail := parseReceipt(data)
	if cause == "" && (rc.shape != "envelope" || rc.payload["spec"] != Spec) {
		cause, detail = CauseUnknownShape, fmt.Sprintf("a %s receipt, not a draft-04 envelope", rc.shape)
	}
	var r Result
	switch {
	case keys != nil:
		r = check(rc, cause, detail, Options{Keys: keys})
	case cause != "":
		r = Result{Outcome: Undecidable, Cause: cause, Detail: detail}
	case rc.unsigned != "":
		r = Result{Outcome: Invalid, Cause: CauseUnsignedMember, Detail: "draft-04 envelope with " + rc.unsigned + ", which the signature does not cover"}
	}
	if r.Outcome != Valid {
		r.Shape, r.KID, r.Hash = rc.shape, rc.kid, rc.hash
		return nil, &OpenError{r}
	}
	out := &Receipt{KID: rc.kid, Signature: rc.sig, Hash: rc.hash, Key: r.Key}
	if err := decodePayload(rc.payload, &out.Payload, &out.Extra); err != nil {
		return nil, &OpenError{Result{Outcome: Undecidable, Cause: CauseMalformed, Detail: err.Error(), Shape: rc.shape, KID: rc.kid, Hash: rc.hash}}
	}
	return out, nil
}

// payloadMembers is the set of member names Payload has fields for, built
// on first use (a hook process never opens a receipt).
var payloadMembers = sync.OnceValue(func() map[string]bool {
	m := make(map[string]bool)
	t := reflect.TypeFor[Payload]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		m[name] = true
	}
	return m
})

// decodePayload decodes a parsed payload into p by exact names, and puts
// the members p has no field for in *extra.
func decodePayload(m map[string]any, p *Payload, extra *map[string]any) error {
	if err := strictjson.Decode(m, p, strictjson.IgnoreUnknown); err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	for k, v := range m {
		if !payloadMembers()[k] {
			if *extra == nil {
				*extra = make(map[string]any)
			}
			(*extra)[k] = v
		}
	}
	return nil
}

// Open reads the entry's receipt as Open does. ParseEntry verified it
// already, with the entry's own key: Receipt.Key is that key, and
// Receipt.Signature is not kept.
func (e *Entry) Open() (*Receipt, error) {
	out := &Receipt{KID: e.KID, Hash: ChainHash(e.Receipt), Key: e.PublicKey}
	if err := decodePayload(e.Payload, &out.Payload, &out.Extra); err != nil {
		return nil, &OpenError{Result{Outcome: Undecidable, Cause: CauseMalformed, Detail: err.Error(), Shape: "envelope", KID: e.KID, Hash: out.Hash}}
	}
	return out, nil
}
