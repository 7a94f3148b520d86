package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits on untrusted JSON accepted by [Parse].
const (
	// MaxDocumentSize is the largest document Parse accepts, in bytes.
	MaxDocumentSize = 1 << 20
	// MaxDepth is the deepest nesting of arrays and objects Parse accepts.
	MaxDepth = 64
)

// A SyntaxError reports JSON that Parse refuses, with the byte offset at which
// the problem was found.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// ErrTooLarge is returned by Parse for documents over MaxDocumentSize.
var ErrTooLarge = errors.New("document too large")

// Parse strictly parses one JSON document from untrusted input. It rejects
// duplicate object keys, invalid UTF-8, lone surrogate escapes, nesting deeper
// than MaxDepth, documents larger than MaxDocumentSize, and trailing data.
//
// Objects become map[string]any, arrays []any, strings string, numbers
// json.Number (the literal as written), and true, false and null become bool
// and nil.
func Parse(data []byte) (any, error) {
	if len(data) > MaxDocumentSize {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxDocumentSize)
	}
	p := parser{data: data}
	defer p.putStacks(p.getStacks())
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.errorf("trailing data after the document")
	}
	return v, nil
}

// ParseObject is Parse for documents that must be a JSON object.
func ParseObject(data []byte) (map[string]any, error) {
	v, err := Parse(data)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &SyntaxError{0, "document is not a JSON object"}
	}
	return m, nil
}

// A Document is a JSON object as ParseDocument returns it, with what a
// verifier of signed bytes needs beyond its value.
type Document struct {
	Object map[string]any
	// Canonical reports whether the input was already in JCS form, so
	// that its bytes are their own canonical form.
	Canonical bool
	// Spans holds where each top-level member's value lies in the input
	// ("key"), and each member of the objects directly inside it whose
	// value is an object ("key\x00key").
	Spans map[string][2]int
	// ASCIIKeys reports whether every object key is ASCII.
	ASCIIKeys bool
}

// ParseDocument is ParseObject for signed documents: it also refuses, with
// a *FoldError, any object with two members whose names are equal under
// [Fold], since a reader that decodes into a struct would take one for the
// other; and it reports what a verifier needs to hash and slice the input
// without canonicalizing it again.
func ParseDocument(data []byte) (Document, error) {
	if len(data) > MaxDocumentSize {
		return Document{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxDocumentSize)
	}
	p := parser{data: data, members: make(map[string][2]int, 4), fold: true}
	defer p.putStacks(p.getStacks())
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return Document{}, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return Document{}, p.errorf("trailing data after the document")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return Document{}, &SyntaxError{0, "document is not a JSON object"}
	}
	return Document{Object: m, Canonical: !p.nonCanonical, Spans: p.members, ASCIIKeys: !p.nonASCIIKey}, nil
}

type parser struct {
	data []byte
	pos  int
	// nonCanonical is set when the input is not already in JCS form
	// (white space, unsorted keys, escapes or numbers JCS writes otherwise).
	nonCanonical bool
	// members records the value span of each member of the top-level
	// object ("key") and of the object members of the objects directly
	// inside it ("key\x00key").
	members map[string][2]int
	topKey  string // the top-level member being parsed
	// nonASCIIKey is set when an object key has a byte outside ASCII.
	nonASCIIKey bool
	// fold refuses objects with two members whose names fold alike; path
	// is then the members and array elements the parser is inside.
	fold bool
	path []pathStep
	// keys and vals hold the members of the objects being parsed, the
	// inner ones last.
	keys []string
	vals []any
}

// stacks are a parser's keys and vals, kept from one parse to the next.
type stacks struct {
	keys []string
	vals []any
}

var stackPool = sync.Pool{New: func() any { return &stacks{make([]string, 0, 32), make([]any, 0, 32)} }}

// getStacks gives p stacks from the pool; putStacks gives them back,
// emptied (stacks grown past a few thousand members by a large object are
// left to the collector).
func (p *parser) getStacks() *stacks {
	st := stackPool.Get().(*stacks)
	p.keys, p.vals = st.keys[:0], st.vals[:0]
	return st
}

func (p *parser) putStacks(st *stacks) {
	if cap(p.keys) > 4096 || cap(p.vals) > 4096 {
		return
	}
	st.keys, st.vals = p.keys[:0], p.vals[:0]
	clear(st.keys[:cap(st.keys)])
	clear(st.vals[:cap(st.vals)])
	stackPool.Put(st)
}

// A pathStep is a member name, or an array index when key is "".
type pathStep struct {
	key   string
	index int
}

func (p *parser) pathString() string {
	var b strings.Builder
	for _, s := range p.path {
		if s.key == "" {
			fmt.Fprintf(&b, "[%d]", s.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.key)
	}
	return b.String()
}

func (p *parser) errorf(format string, args ...any) error {
	return &SyntaxError{Offset: p.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
			p.nonCanonical = true
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		start := p.pos
		s, err := p.string()
		if err != nil {
			return nil, err
		}
		if _, v, ok := intern(p.data[start+1 : p.pos-1]); ok {
			return v, nil // boxed once, not per value
		}
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		for _, lit := range []struct {
			text string
			v    any
		}{{"true", true}, {"false", false}, {"null", nil}} {
			if len(p.data)-p.pos >= len(lit.text) && string(p.data[p.pos:p.pos+len(lit.text)]) == lit.text {
				p.pos += len(lit.text)
				return lit.v, nil
			}
		}
		return nil, p.errorf("unexpected character %q", c)
	}
}

// smallObject is the most members an object is parsed with before its
// map is made: until then its members wait on the parser's stacks (a
// duplicate found by comparing the names), and its map is made once, at
// its size, rather than grown.
const smallObject = 16

func (p *parser) object(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, p.errorf("nesting deeper than %d", MaxDepth)
	}
	p.pos++ // {
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return make(map[string]any), nil
	}
	// This object's names and values, on the stacks after those of the
	// objects it is inside; m, once it has more than smallObject members;
	// asciiKeys reports whether its names are all ASCII.
	base, asciiKeys := len(p.keys), true
	defer func() { p.keys, p.vals = p.keys[:base], p.vals[:base] }()
	var m map[string]any
	prevKey := ""
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("expected object key")
		}
		keyPos := p.pos
		k, err := p.string()
		if err != nil {
			return nil, err
		}
		dup := false
		if m != nil {
			_, dup = m[k]
		} else {
			dup = slices.Contains(p.keys[base:], k)
		}
		if dup {
			return nil, &SyntaxError{keyPos, fmt.Sprintf("duplicate key %q", k)}
		}
		for i := 0; i < len(k) && asciiKeys; i++ {
			asciiKeys = k[i] < 0x80
		}
		p.nonASCIIKey = p.nonASCIIKey || !asciiKeys
		if len(p.keys) > base && CompareUTF16(prevKey, k) > 0 {
			p.nonCanonical = true
		}
		prevKey = k
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("expected ':' after object key")
		}
		p.pos++
		p.skipSpace()
		start := p.pos
		if depth == 1 {
			p.topKey = k
		}
		v, err := p.element(depth, pathStep{key: k})
		if err != nil {
			return nil, err
		}
		p.keys, p.vals = append(p.keys, k), append(p.vals, v)
		if m != nil {
			m[k] = v
		} else if len(p.keys)-base > smallObject {
			m = make(map[string]any, 2*smallObject)
			for i, k := range p.keys[base:] {
				m[k] = p.vals[base+i]
			}
		}
		if p.members != nil && strings.IndexByte(k, 0) < 0 && strings.IndexByte(p.topKey, 0) < 0 {
			switch depth {
			case 1:
				p.members[k] = [2]int{start, p.pos}
			case 2:
				if p.data[start] == '{' {
					p.members[p.topKey+"\x00"+k] = [2]int{start, p.pos}
				}
			}
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			if p.fold {
				if a, b, dup := foldDuplicateKeys(p.keys[base:], asciiKeys); dup {
					return nil, &FoldError{Path: p.pathString(), A: a, B: b}
				}
			}
			if m == nil {
				m = make(map[string]any, len(p.keys)-base)
				for i, k := range p.keys[base:] {
					m[k] = p.vals[base+i]
				}
			}
			return m, nil
		default:
			return nil, p.errorf("expected ',' or '}' in object")
		}
	}
}

// element parses the value of a member or an array element, at step.
func (p *parser) element(depth int, step pathStep) (any, error) {
	if !p.fold {
		return p.value(depth)
	}
	p.path = append(p.path, step)
	v, err := p.value(depth)
	p.path = p.path[:len(p.path)-1]
	return v, err
}

func (p *parser) array(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, p.errorf("nesting deeper than %d", MaxDepth)
	}
	p.pos++ // [
	a := []any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return a, nil
	}
	for {
		p.skipSpace()
		v, err := p.element(depth, pathStep{index: len(a)})
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return a, nil
		default:
			return nil, p.errorf("expected ',' or ']' in array")
		}
	}
}

func (p *parser) number() (any, error) {
	start := p.pos
	d := p.data
	if p.pos < len(d) && d[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	intStart := p.pos
	n := digits()
	if n == 0 {
		return nil, p.errorf("invalid number")
	} else if n > 1 && d[intStart] == '0' {
		return nil, &SyntaxError{intStart, "number with leading zero"}
	}
	short := n <= 15 // an integer ParseFloat reads exactly, unless more follows
	if p.pos < len(d) && d[p.pos] == '.' {
		short = false
		p.pos++
		if digits() == 0 {
			return nil, p.errorf("invalid number fraction")
		}
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		short = false
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number exponent")
		}
	}
	lit := string(d[start:p.pos])
	// JCS writes integers of up to 15 digits as they are; anything else
	// (fractions, exponents, -0, long integers) may be written differently.
	if strings.ContainsAny(lit, ".eE") || len(strings.TrimPrefix(lit, "-")) > 15 || lit == "-0" {
		p.nonCanonical = true
	}
	if !short { // an integer of up to 15 digits is in range
		if f, err := strconv.ParseFloat(lit, 64); err != nil || f != f {
			return nil, &SyntaxError{start, "number out of range"}
		}
	}
	return json.Number(lit), nil
}

func (p *parser) string() (string, error) {
	p.pos++ // opening quote
	d := p.data
	start := p.pos
	// Fast path: no escapes.
	for p.pos < len(d) {
		c := d[p.pos]
		if c == '"' {
			s := d[start:p.pos]
			p.pos++
			if is, _, ok := intern(s); ok {
				return is, nil // valid UTF-8: ASCII
			}
			if !utf8.Valid(s) {
				return "", &SyntaxError{start, "invalid UTF-8 in string"}
			}
			return string(s), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.errorf("control character in string")
		}
		p.pos++
	}
	buf := append([]byte(nil), d[start:p.pos]...)
	for p.pos < len(d) {
		c := d[p.pos]
		switch {
		case c == '"':
			if !utf8.Valid(buf) {
				return "", &SyntaxError{start, "invalid UTF-8 in string"}
			}
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		p.pos++
		if p.pos >= len(d) {
			break
		}
		e := d[p.pos]
		p.pos++
		switch e {
		case '/':
			buf = append(buf, e)
			p.nonCanonical = true
		case '"', '\\':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			hexStart := p.pos
			r, err := p.hex4()
			if err != nil {
				return "", err
			}
			// JCS escapes only control characters without a short form, in lowercase hex.
			if r >= 0x20 || r == '\b' || r == '\t' || r == '\n' || r == '\f' || r == '\r' || string(p.data[hexStart:p.pos]) != fmt.Sprintf("%04x", r) {
				p.nonCanonical = true
			}
			if utf16.IsSurrogate(r) {
				if r >= 0xdc00 || p.pos+1 >= len(d) || d[p.pos] != '\\' || d[p.pos+1] != 'u' {
					return "", p.errorf("lone surrogate \\u%04x", r)
				}
				p.pos += 2
				r2, err := p.hex4()
				if err != nil {
					return "", err
				}
				if r2 < 0xdc00 || r2 > 0xdfff {
					return "", p.errorf("lone surrogate \\u%04x", r)
				}
				r = utf16.DecodeRune(r, r2)
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return "", p.errorf("invalid escape \\%c", e)
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *parser) hex4() (rune, error) {
	if len(p.data)-p.pos < 4 {
		return 0, p.errorf("short \\u escape")
	}
	n, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, p.errorf("invalid \\u escape")
	}
	p.pos += 4
	return rune(n), nil
}
