package trace

import (
	"encoding/json"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// A LegacyForm is an ad-hoc serialization that TRACE signers used before
// trace-spec commit 1a3a711 switched signing to RFC 8785: Python's
// json.dumps(record, sort_keys=True, ...). It differs from JCS in key order
// (code points, not UTF-16 code units), in escaping non-ASCII characters as
// \uXXXX, in separators and in float formatting. The names are those of the
// canonicalization-boundary vectors' diverges_under lists.
type LegacyForm struct {
	Name string
	// Python is the call that produces the bytes.
	Python               string
	compact, ensureASCII bool
}

// LegacyForms are the forms Verify tries when a signature fails over the
// JCS bytes, so that it can name the case. sort_keys_compact is what
// agentrust-trace's sign.py used.
var LegacyForms = []LegacyForm{
	{"sort_keys_default", "json.dumps(record, sort_keys=True)", false, true},
	{"sort_keys_compact", `json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True)`, true, true},
	{"sort_keys_compact_utf8", `json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`, true, false},
}

// Marshal returns v (as strictjson.Parse returns it) in the legacy form, as
// UTF-8 bytes.
func (f LegacyForm) Marshal(v any) ([]byte, error) {
	var b strings.Builder
	if err := f.write(&b, v); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func (f LegacyForm) write(b *strings.Builder, v any) error {
	item, key := ", ", ": "
	if f.compact {
		item, key = ",", ":"
	}
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		f.writeString(b, v)
	case json.Number:
		s, err := pythonNumber(v)
		if err != nil {
			return err
		}
		b.WriteString(s)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(item)
			}
			if err := f.write(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys) // byte order of UTF-8 is code-point order, Python's
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(item)
			}
			f.writeString(b, k)
			b.WriteString(key)
			if err := f.write(b, v[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("legacy form: unexpected %T", v)
	}
	return nil
}

// writeString writes s as Python's json encoder does.
func (f LegacyForm) writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || f.ensureASCII && r > 0x7e && r <= 0xffff:
				fmt.Fprintf(b, `\u%04x`, r)
			case f.ensureASCII && r > 0xffff:
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
			default:
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// pythonNumber formats a JSON number as json.dumps writes what json.loads
// read: integers as they are, other numbers as repr(float).
func pythonNumber(n json.Number) (string, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		i, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return "", fmt.Errorf("legacy form: number %q", s)
		}
		return i.String(), nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return "", fmt.Errorf("legacy form: number %q: %w", s, err)
	}
	return pythonFloat(x), nil
}

// pythonFloat is repr(x) of a finite float: the shortest round-trip digits,
// in positional form for decimal exponents -4 <= e < 16, else as d.ddde±XX.
func pythonFloat(x float64) string {
	sign := ""
	if x < 0 || x == 0 && 1/x < 0 {
		sign, x = "-", -x
	}
	e := strconv.FormatFloat(x, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	p, _ := strconv.Atoi(exp)
	if p < -4 || p >= 16 {
		esign := "+"
		if p < 0 {
			esign, p = "-", -p
		}
		return fmt.Sprintf("%s%se%s%02d", sign, mant, esign, p)
	}
	point := p + 1 // digits before the decimal point
	switch {
	case point <= 0:
		return sign + "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		return sign + digits + strings.Repeat("0", point-len(digits)) + ".0"
	}
	return sign + digits[:point] + "." + digits[point:]
}
