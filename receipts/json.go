package receipts

import (
	"github.com/docketlog/docket/internal/strictjson"
)

// The strict JSON parser and the JCS encoding are implemented once, in
// internal/strictjson; receipts keeps its names for third parties.

// Limits on untrusted JSON accepted by [Parse].
const (
	// MaxDocumentSize is the largest document Parse accepts, in bytes.
	MaxDocumentSize = strictjson.MaxDocumentSize
	// MaxDepth is the deepest nesting of arrays and objects Parse accepts.
	MaxDepth = strictjson.MaxDepth
)

// A SyntaxError reports JSON that Parse refuses, with the byte offset at which
// the problem was found.
type SyntaxError = strictjson.SyntaxError

// ErrTooLarge is returned by Parse for documents over MaxDocumentSize.
var ErrTooLarge = strictjson.ErrTooLarge

// Parse strictly parses one JSON document from untrusted input. It rejects
// duplicate object keys, invalid UTF-8, lone surrogate escapes, nesting deeper
// than MaxDepth, documents larger than MaxDocumentSize, and trailing data.
//
// Objects become map[string]any, arrays []any, strings string, numbers
// json.Number (the literal as written), and true, false and null become bool
// and nil.
func Parse(data []byte) (any, error) { return strictjson.Parse(data) }

// ParseObject is Parse for documents that must be a JSON object.
func ParseObject(data []byte) (map[string]any, error) { return strictjson.ParseObject(data) }

// Canonicalize returns the RFC 8785 (JCS) canonical form of v, which must be
// made of the types Parse returns (map[string]any, []any, string, json.Number,
// float64, int, int64, bool, nil). Strings must be valid UTF-8. Object keys are
// sorted by UTF-16 code units; numbers are serialized as ECMAScript does.
func Canonicalize(v any) ([]byte, error) { return strictjson.Canonicalize(v) }

// CanonicalizeJSON strictly parses data (see Parse) and returns its JCS form.
func CanonicalizeJSON(data []byte) ([]byte, error) { return strictjson.CanonicalizeJSON(data) }

// parseSpans is parseSpansKeys without the keys' report.
func parseSpans(data []byte) (obj map[string]any, canonical bool, members map[string][2]int, err error) {
	obj, canonical, members, _, err = parseSpansKeys(data)
	return obj, canonical, members, err
}

// parseSpansKeys parses a signed document (a receipt or a log entry):
// strictjson.ParseDocument, which also refuses members whose names fold
// alike.
func parseSpansKeys(data []byte) (obj map[string]any, canonical bool, members map[string][2]int, asciiKeys bool, err error) {
	d, err := strictjson.ParseDocument(data)
	return d.Object, d.Canonical, d.Spans, d.ASCIIKeys, err
}
