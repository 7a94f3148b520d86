package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/docketlog/docket/internal/strictjson"
)

// One reading. The relay decides on its own parse of a message and
// forwards the bytes, so a message is relayed only when every mainstream
// parser reads it as the relay does (docs/mcp.md, "One reading"):
//
//   - Go's encoding/json matches member names to struct fields case
//     insensitively, folding Unicode (ſ is s, K is k) and, with
//     encoding/json/v2's case-insensitive matching, ignoring '_' and '-';
//     .NET's System.Text.Json (the C# SDK's web defaults) compares upper
//     cases (ı is I). So no object may hold two members whose names fold
//     alike, and at the positions a server routes on (the envelope,
//     params, result, error and their _meta) no member may fold like a
//     JSON-RPC or MCP member name without being it.
//   - JSON.parse keeps "__proto__" as a member, but the TypeScript SDK's
//     zod drops it, and older zod set the prototype with it.
//   - JavaScript and Cedar read numbers as IEEE doubles, Python and Go
//     integers exactly: numbers must be exact in both, I-JSON's range.
//
// A reading scans the bytes once, without building values, so the same
// code checks client messages (parsed strictly by strictjson.Parse as well)
// and server messages of any length.

// maxScanDepth bounds the nesting the scanner follows.
const maxScanDepth = 1000

// maxNameLen bounds a member name the scanner keeps.
const maxNameLen = 64 << 10

// maxCapture bounds the value of a top-level member a reading keeps.
const maxCapture = 4 << 10

// maxSafeInteger is I-JSON's largest exact integer, 2^53-1.
const maxSafeInteger = 1<<53 - 1

// errNotJSON is the reading of bytes that are not one JSON value.
var errNotJSON = errors.New("not a JSON value")

// A reading is what the relay reads in one message by its structure alone.
type reading struct {
	// err is set when the bytes are not one JSON value.
	err error
	// batch is set for a JSON array (a JSON-RPC batch); elems then holds
	// the top-level members of each element that is an object.
	batch bool
	elems [][]member
	// members are the top-level members of an object, in order.
	members []member
	// ambiguous says why some mainstream parser could read the message
	// otherwise than the relay does; "" when none could. routedAmbiguous
	// is the same for the positions a server routes on (position.routed).
	ambiguous, routedAmbiguous string
	// inexact is set when a number is outside I-JSON's exact range (or
	// written with more digits than its double has), so that parsers
	// disagree on its value.
	inexact bool
	// isError is the literal of result.isError ("true", "false", …), ""
	// when there is none.
	isError string
}

// A member is a top-level member of a message: its name as decoders read
// it (escapes decoded) and its value's bytes when they are short.
type member struct {
	name  string
	raw   []byte // nil when the value is longer than maxCapture
	first byte   // the value's first byte: '{' for an object
}

// member returns the value of the top-level member named exactly name.
func (rd *reading) member(name string) (raw []byte, ok bool) {
	m, ok := rd.memberOf(name)
	return m.raw, ok
}

// memberOf returns the top-level member named exactly name.
func (rd *reading) memberOf(name string) (member, bool) {
	for _, m := range rd.members {
		if m.name == name {
			return m, true
		}
	}
	return member{}, false
}

// has reports whether the message has a top-level member that folds like
// name, itself or a variant.
func (rd *reading) has(name string) bool {
	return len(foldedMembers(rd.members, name)) > 0
}

// foldedMembers returns the members that fold like name.
func foldedMembers(ms []member, name string) []member {
	var out []member
	for _, m := range ms {
		if foldEqual(m.name, name) {
			out = append(out, m)
		}
	}
	return out
}

// read scans one JSON value from in.
func read(in io.ByteScanner) *reading {
	s := &scanner{in: in, rd: &reading{}}
	s.skipSpace()
	err := s.value(0, posTop)
	if err == nil {
		s.skipSpace()
		if _, e := s.in.ReadByte(); e != io.EOF {
			err = errNotJSON
		}
	}
	if err != nil {
		s.rd.err = err
	}
	return s.rd
}

// readBytes is read over a buffered message.
func readBytes(b []byte) *reading { return read(bytes.NewReader(b)) }

// A position is where an object lies in a message, for the checks that
// depend on it.
type position int

const (
	posOther   position = iota
	posTop              // the message (or a batch element)
	posParams           // params
	posResult           // result
	posError            // error
	posMeta             // params._meta, result._meta
	posIsError          // result.isError
)

// child returns the position of member name of an object at p.
func (p position) child(name string) position {
	switch {
	case p == posTop && name == "params":
		return posParams
	case p == posTop && name == "result":
		return posResult
	case p == posTop && name == "error":
		return posError
	case (p == posParams || p == posResult) && name == "_meta":
		return posMeta
	case p == posResult && name == "isError":
		return posIsError
	}
	return posOther
}

// routed reports whether a server routes on the members of an object at
// p: their names must not fold like a protocol name without being it.
func (p position) routed() bool {
	return p == posTop || p == posParams || p == posResult || p == posError || p == posMeta
}

type scanner struct {
	in io.ByteScanner
	rd *reading
	// capture collects the value of the top-level member being scanned.
	capture   []byte
	capturing bool
	long      bool // the capture ran over maxCapture
}

func (s *scanner) ambiguous(format string, args ...any) { s.flag(false, format, args...) }

// flag notes why parsers read the message differently, at a position a
// server routes on or not.
func (s *scanner) flag(routed bool, format string, args ...any) {
	if s.rd.ambiguous == "" {
		s.rd.ambiguous = fmt.Sprintf(format, args...)
	}
	if routed && s.rd.routedAmbiguous == "" {
		s.rd.routedAmbiguous = fmt.Sprintf(format, args...)
	}
}

func (s *scanner) next() (byte, error) {
	c, err := s.in.ReadByte()
	if err != nil {
		return 0, errNotJSON
	}
	if s.capturing {
		if len(s.capture) < maxCapture {
			s.capture = append(s.capture, c)
		} else {
			s.long = true
		}
	}
	return c, nil
}

func (s *scanner) unread() {
	_ = s.in.UnreadByte()
	if s.capturing && !s.long && len(s.capture) > 0 {
		s.capture = s.capture[:len(s.capture)-1]
	}
}

func (s *scanner) skipSpace() {
	for {
		c, err := s.in.ReadByte()
		if err != nil {
			return
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			_ = s.in.UnreadByte()
			return
		}
	}
}

// spaceNext skips white space and returns the next byte.
func (s *scanner) spaceNext() (byte, error) {
	for {
		c, err := s.next()
		if err != nil || c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, err
		}
	}
}

// value scans one value at pos, depth containers deep.
func (s *scanner) value(depth int, pos position) error {
	c, err := s.next()
	if err != nil {
		return err
	}
	if pos == posIsError {
		s.rd.isError = string(c)
	}
	switch {
	case c == '{':
		return s.object(depth+1, pos)
	case c == '[':
		return s.array(depth+1, pos)
	case c == '"':
		_, err := s.str(false)
		return err
	case c == '-' || c >= '0' && c <= '9':
		return s.number(c)
	case c == 't':
		return s.literal("rue")
	case c == 'f':
		return s.literal("alse")
	case c == 'n':
		return s.literal("ull")
	}
	return errNotJSON
}

func (s *scanner) literal(rest string) error {
	for i := 0; i < len(rest); i++ {
		if c, err := s.next(); err != nil || c != rest[i] {
			return errNotJSON
		}
	}
	return nil
}

func (s *scanner) object(depth int, pos position) error {
	if depth > maxScanDepth {
		s.ambiguous("nesting deeper than %d", maxScanDepth)
		return errNotJSON
	}
	top := pos == posTop
	if top && s.rd.batch {
		s.rd.elems = append(s.rd.elems, nil)
	}
	var names siblings
	c, err := s.spaceNext()
	if err != nil || c == '}' {
		return err
	}
	for {
		if c != '"' {
			return errNotJSON
		}
		name, err := s.str(true)
		if err != nil {
			return err
		}
		s.checkName(name, &names, pos.routed())
		if c, err = s.spaceNext(); err != nil || c != ':' {
			return errNotJSON
		}
		s.skipSpace()
		if top {
			s.capture, s.capturing, s.long = s.capture[:0], true, false
		}
		err = s.value(depth, pos.child(name))
		if top {
			s.capturing = false
			m := member{name: name}
			if len(s.capture) > 0 {
				m.first = s.capture[0]
			}
			if !s.long {
				m.raw = bytes.Clone(s.capture)
			}
			if s.rd.batch {
				last := &s.rd.elems[len(s.rd.elems)-1]
				*last = append(*last, m)
			} else {
				s.rd.members = append(s.rd.members, m)
			}
		}
		if err != nil {
			return err
		}
		if c, err = s.spaceNext(); err != nil {
			return err
		}
		switch c {
		case '}':
			return nil
		case ',':
			if c, err = s.spaceNext(); err != nil {
				return err
			}
		default:
			return errNotJSON
		}
	}
}

// siblings are the member names of one object read so far: a list while
// it is short, then a set of their fold keys.
type siblings struct {
	list  []string
	folds map[string]string // foldKey → name
}

// maxSiblingList is the number of members compared pairwise before the
// fold keys are kept in a set.
const maxSiblingList = 16

// add adds name and returns a sibling it folds like, if any.
func (n *siblings) add(name string) (string, bool) {
	if n.folds == nil {
		for _, o := range n.list {
			if foldEqual(name, o) {
				return o, true
			}
		}
		if n.list = append(n.list, name); len(n.list) <= maxSiblingList {
			return "", false
		}
		n.folds = make(map[string]string, 2*maxSiblingList)
		for _, o := range n.list[:len(n.list)-1] {
			n.folds[foldKey(o)] = o
		}
	}
	k := foldKey(name)
	if o, ok := n.folds[k]; ok {
		return o, true
	}
	n.folds[k] = name
	return "", false
}

// checkName checks a member name against its siblings' and, where a
// server routes on it, against the protocol's member names.
func (s *scanner) checkName(name string, names *siblings, routed bool) {
	if name == "__proto__" {
		s.flag(routed, "a member is named __proto__")
	}
	if o, ok := names.add(name); ok {
		if o == name {
			s.flag(routed, "duplicate member %q", name)
		} else {
			s.flag(routed, "members %q and %q name the same field for case-insensitive decoders", o, name)
		}
		return
	}
	if routed {
		if p, ok := protocolName(name); ok {
			s.flag(true, "member %q is read as %q by case-insensitive decoders", name, p)
		}
	}
}

func (s *scanner) array(depth int, pos position) error {
	if depth > maxScanDepth {
		s.ambiguous("nesting deeper than %d", maxScanDepth)
		return errNotJSON
	}
	elem := posOther
	if depth == 1 {
		s.rd.batch, elem = true, posTop
	}
	c, err := s.spaceNext()
	if err != nil || c == ']' {
		return err
	}
	s.unread()
	for {
		if err := s.value(depth, elem); err != nil {
			return err
		}
		if c, err = s.spaceNext(); err != nil {
			return err
		}
		switch c {
		case ']':
			return nil
		case ',':
			s.skipSpace()
		default:
			return errNotJSON
		}
	}
}

// str scans a string after its opening quote. With keep, it returns the
// string as decoders read it (see decodeName).
func (s *scanner) str(keep bool) (string, error) {
	var raw []byte
	for {
		c, err := s.next()
		if err != nil {
			return "", err
		}
		switch {
		case c == '"':
			if !keep {
				return "", nil
			}
			return decodeName(raw), nil
		case c < 0x20:
			return "", errNotJSON
		}
		if keep {
			if len(raw) >= maxNameLen {
				s.ambiguous("a member name is longer than %d bytes", maxNameLen)
				keep = false
			} else {
				raw = append(raw, c)
			}
		}
		if c != '\\' {
			continue
		}
		e, err := s.next()
		if err != nil {
			return "", err
		}
		if keep {
			raw = append(raw, e)
		}
		switch e {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			for range 4 {
				h, err := s.next()
				if err != nil || !isHex(h) {
					return "", errNotJSON
				}
				if keep {
					raw = append(raw, h)
				}
			}
		default:
			return "", errNotJSON
		}
	}
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// decodeName decodes a string's body (valid JSON) as Go's encoding/json
// does: an invalid byte or a lone surrogate reads as U+FFFD.
func decodeName(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw)
	}
	q := make([]byte, 0, len(raw)+2)
	q = append(append(append(q, '"'), raw...), '"')
	var s string
	_ = json.Unmarshal(q, &s)
	return s
}

// maxNumberLen bounds a number literal: longer ones are not JSON the
// relay relays.
const maxNumberLen = 1 << 10

// number scans a number whose first byte is c and notes whether every
// parser reads the same value from it.
func (s *scanner) number(c byte) error {
	lit := []byte{c}
	for {
		c, err := s.next()
		if err != nil {
			break
		}
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			s.unread()
			break
		}
		if len(lit) >= maxNumberLen {
			return errNotJSON
		}
		lit = append(lit, c)
	}
	if !validNumber(lit) {
		return errNotJSON
	}
	if !exactNumber(string(lit)) {
		s.rd.inexact = true
	}
	return nil
}

// validNumber reports whether lit is a JSON number.
func validNumber(lit []byte) bool {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
			n++
		}
		return n
	}
	start := i
	if n := digits(); n == 0 || n > 1 && lit[start] == '0' {
		return false
	}
	if i < len(lit) && lit[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(lit)
}

// exactNumber reports whether every mainstream parser reads the same
// value from the JSON number lit: its value is a finite IEEE double that
// it writes exactly (the double's shortest decimal, in any notation), not
// negative zero, and, when it is an integer, within ±(2^53-1), the range
// in which doubles and integers agree (I-JSON, RFC 7493 §2.2).
func exactNumber(lit string) bool {
	// Fast path: integers of up to 15 digits.
	digits := strings.TrimPrefix(lit, "-")
	if len(digits) <= 15 && strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) < 0 {
		return lit != "-0"
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil { // out of range
		return false
	}
	neg, mant, exp, ok := decimal(lit)
	if !ok {
		return false
	}
	if f == 0 {
		return mant == "" && !neg
	}
	if math.Trunc(f) == f && math.Abs(f) > maxSafeInteger {
		return false
	}
	_, smant, sexp, _ := decimal(strconv.FormatFloat(f, 'e', -1, 64))
	return mant == smant && exp == sexp
}

// decimal returns the value of the decimal number lit as its sign, its
// significant digits (no leading or trailing zeros; "" for zero) and the
// exponent of the last one. ok is false when the exponent is too large
// to handle (the number is then not exact anyway).
func decimal(lit string) (neg bool, mant string, exp int, ok bool) {
	if strings.HasPrefix(lit, "-") {
		neg, lit = true, lit[1:]
	}
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		n, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+"))
		if err != nil || n > 1<<30 || n < -(1<<30) {
			return false, "", 0, false
		}
		exp, lit = n, lit[:i]
	}
	if i := strings.IndexByte(lit, '.'); i >= 0 {
		exp -= len(lit) - i - 1
		lit = lit[:i] + lit[i+1:]
	}
	lit = strings.TrimLeft(lit, "0")
	t := strings.TrimRight(lit, "0")
	exp += len(lit) - len(t)
	if t == "" {
		exp = 0
	}
	return neg, t, exp, true
}

// foldKey returns the form of name that every case-insensitive decoder
// reads alike: runes folded by strictjson.FoldRune, the project's one case
// folding, and '_' and '-' dropped, because encoding/json/v2's
// case-insensitive matching ignores them. The relay drops them and signed
// documents (strictjson.Fold) do not: the relay answers for how any
// server's decoder, configured as MCP SDKs configure it, routes a message,
// while a receipt or an evidence file is read by verifiers that match
// names exactly or as encoding/json does by default.
func foldKey(name string) string {
	b := make([]byte, 0, len(name))
	for _, r := range name {
		if r == '_' || r == '-' {
			continue
		}
		b = utf8.AppendRune(b, strictjson.FoldRune(r))
	}
	return string(b)
}

// foldEqual reports whether foldKey(a) == foldKey(b), without allocating.
func foldEqual(a, b string) bool {
	for {
		for len(a) > 0 && (a[0] == '_' || a[0] == '-') {
			a = a[1:]
		}
		for len(b) > 0 && (b[0] == '_' || b[0] == '-') {
			b = b[1:]
		}
		if a == "" || b == "" {
			return a == b
		}
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb && strictjson.FoldRune(ra) != strictjson.FoldRune(rb) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
}

// protocolNames are the member names of JSON-RPC 2.0 and of the MCP
// schema (every revision from 2024-11-05 to 2026-07-28 and the draft): a
// member at a position a server routes on that folds like one of them
// must be it.
var protocolNames = strings.Fields(`$schema _meta action additionalProperties annotations anyOf argument
arguments audience blob cacheScope call cancel capabilities clientInfo code completion completions const
content contents context costPriority create createMessage createdAt cursor data default description
destructiveHint elicitation elicitationId elicitations enum enumNames error execution experimental
extensions form format hasMore hints icons id idempotentHint includeContext input inputRequests
inputResponses inputSchema instructions intelligencePriority io.modelcontextprotocol/clientCapabilities
io.modelcontextprotocol/clientInfo io.modelcontextprotocol/logLevel io.modelcontextprotocol/protocolVersion
io.modelcontextprotocol/serverInfo io.modelcontextprotocol/subscriptionId isError items jsonrpc
lastModified lastUpdatedAt level list listChanged logger logging maxItems maxLength maxTokens maximum
message messages metadata method mimeType minItems minLength minimum mode model modelPreferences name
nextCursor notifications oneOf openWorldHint outputSchema params pollInterval priority progress
progressToken prompts promptsListChanged properties protocolVersion readOnlyHint reason ref requestId
requestState requested requestedSchema requests required requiredCapabilities resource
resourceSubscriptions resourceTemplates resources resourcesListChanged result resultType role roots
sampling serverInfo size sizes speedPriority src status statusMessage stopReason stopSequences
structuredContent subscribe supported supportedVersions systemPrompt task taskId taskSupport tasks
temperature text theme title toolChoice toolUseId tools toolsListChanged total ttl ttlMs type uri
uriTemplate url value values version websiteUrl`)

// protocolSets returns the protocol names, and each foldKey's protocol
// name, built on first use: not in every docket process (every hook) that
// links the relay and never runs it.
var protocolSets = sync.OnceValues(func() (exact map[string]bool, fold map[string]string) {
	exact, fold = map[string]bool{}, map[string]string{}
	for _, n := range protocolNames {
		exact[n] = true
		fold[foldKey(n)] = n
	}
	return exact, fold
})

// protocolName reports whether name folds like a protocol member name
// without being one, and which.
func protocolName(name string) (string, bool) {
	exact, fold := protocolSets()
	if exact[name] {
		return "", false
	}
	p, ok := fold[foldKey(name)]
	return p, ok
}

// validID returns the JCS form of a request id, or nil when raw is not
// one the relay relays: a string, or an integer within ±(2^53-1) written
// as one (JSON-RPC ids should have no fraction; MCP forbids null).
func validID(raw []byte) []byte {
	if len(raw) == 0 {
		return nil
	}
	v, err := strictjson.Parse(raw)
	if err != nil {
		return nil
	}
	switch v := v.(type) {
	case string:
	case json.Number:
		s := string(v)
		if strings.ContainsAny(s, ".eE") || !exactNumber(s) {
			return nil
		}
	default:
		return nil
	}
	b, err := strictjson.Canonicalize(v)
	if err != nil {
		return nil
	}
	return b
}
