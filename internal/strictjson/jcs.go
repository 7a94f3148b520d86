package strictjson

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Canonicalize returns the RFC 8785 (JCS) canonical form of v, which must be
// made of the types Parse returns (map[string]any, []any, string, json.Number,
// float64, int, int64, bool, nil). Strings must be valid UTF-8. Object keys are
// sorted by UTF-16 code units; numbers are serialized as ECMAScript does.
func Canonicalize(v any) ([]byte, error) {
	return appendCanonical(nil, v)
}

// CanonicalizeJSON strictly parses data (see Parse) and returns its JCS form.
func CanonicalizeJSON(data []byte) ([]byte, error) {
	v, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return Canonicalize(v)
}

func appendCanonical(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if v {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case string:
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("canonicalizing: invalid UTF-8 in string")
		}
		return AppendString(b, v), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return nil, fmt.Errorf("canonicalizing number %q: %w", v, err)
		}
		return appendNumber(b, f)
	case float64:
		return appendNumber(b, v)
	case int:
		return appendNumber(b, float64(v))
	case int64:
		return appendNumber(b, float64(v))
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			if !utf8.ValidString(k) {
				return nil, fmt.Errorf("canonicalizing: invalid UTF-8 in key")
			}
			keys = append(keys, k)
		}
		slices.SortFunc(keys, CompareUTF16)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendCanonical(b, v[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	default:
		return nil, fmt.Errorf("canonicalizing: unsupported type %T", v)
	}
}

// CompareUTF16 orders strings by their UTF-16 code units, as RFC 8785 §3.2.3
// requires. For strings without supplementary-plane characters this is the
// same as byte order, which is the fast path.
func CompareUTF16(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < 0x80 && b[i] < 0x80 {
				return int(a[i]) - int(b[i])
			}
			return slices.Compare(utf16.Encode([]rune(a[i:])), utf16.Encode([]rune(b[i:])))
		}
	}
	return len(a) - len(b)
}

// appendNumber serializes f as ECMAScript's Number.prototype.toString does
// (RFC 8785 §3.2.2.3). encoding/json's float encoding follows the same rules
// apart from negative zero.
func appendNumber(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("canonicalizing: %v is not a JSON number", f)
	}
	if f == 0 {
		return append(b, '0'), nil
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Go writes e-07 and e+21; ECMAScript writes e-7 and e+21.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JCS string: only '"', '\\' and control
// characters are escaped, with the short forms where JSON has them.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
