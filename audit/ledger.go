package audit

import (
	"bytes"
	"cmp"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/docketlog/docket/receipts"
)

// A ledger is what an audit keeps of a log: one fixed-size rec per entry
// (bad entries included, so that a rec's position is its log index), and
// two side tables for the receipts of tool calls, whatever the size of the
// entries. Issuers and sessions are interned. It is built in index order by
// one goroutine (add), from entries parsed and verified on all cores
// (parseLedgerEntry), and analysed once the whole log is read; it can be
// saved to and loaded from a state directory (state.go), so that the next
// audit of a grown log reads only the new entries.
//
// Memory, for N entries of which T are receipts of tool calls (a tool name
// or tool input hash), X executions (Xs of them settled as added: their
// decision among their session's recentLinks latest entries) and L links
// not settled as added (an entry out of chain order): 64·N + 36·T + 36·X +
// 36·L − 64·Xs bytes (an execution settled keeps 8 bytes, not its 36-byte
// link, and no call print when its print is its decision's), in arrays
// mapped outside the Go heap (reserve), plus 4.5·N while findings are
// computed (a permutation sorted three ways, and hash buckets), plus the
// interned issuers and sessions (their names, at most ~138 bytes each
// (Clip), and ~170 bytes of state per session). Observe mode's and
// reconciliation's facts are flag bits of a rec (no bytes more); their
// findings take, while computed, ~64 bytes per session with decisions not
// enforced and, with RequireReconciled, 8 bytes per session, and re-read
// from the log the entries of the findings listed (unmediated.go).
type ledger struct {
	recs  []rec
	calls []call     // receipts of tool calls, by pos, but for elided ones (fp)
	execs []link     // executions whose decision was not settled as added, by pos
	acted []resolved // executions whose decision was, by pos

	issuerIDs map[string]uint32
	issuers   []issuerInfo
	sessIDs   map[sessKey]uint32
	sessions  []sessionInfo // sessions[0] is the empty session

	bad findingList // bad entries, at most MaxPerKind listed

	pending []pendingLink // by pos

	// factsFrom is the first record with flagAllow…flagOtherKey: records
	// an older docket saved (state.go) lack them.
	factsFrom uint64

	release []func() // of the arrays reserve mapped

	// buckets[k] is the first position in byHash's permutation of a hash
	// whose first bucketBits bits are k.
	buckets    []uint32
	bucketBits uint
}

// reserve makes room for n entries in all: recs, calls and execs move to
// arrays of that capacity outside the Go heap (mapped), which free
// releases. Nothing then grows by doubling, and the memory of a ledger is
// that of its records, not twice it while a collection is due.
func (l *ledger) reserve(n uint64) {
	n = max(n, l.size())
	l.recs = remap(l, l.recs, n)
	l.calls = remap(l, l.calls, n)
	l.execs = remap(l, l.execs, n)
	l.acted = remap(l, l.acted, n)
}

func remap[T any](l *ledger, s []T, n uint64) []T {
	if uint64(cap(s)) >= n {
		return s
	}
	m, release := mapped[T](int(n))
	l.release = append(l.release, release)
	return append(m, s...)
}

// free releases the arrays reserve mapped: the ledger must not be used
// after.
func (l *ledger) free() {
	for _, release := range l.release {
		release()
	}
	l.release = nil
	l.recs, l.calls, l.execs, l.acted = nil, nil, nil, nil
}

// rec is what the ledger keeps of one log entry: 64 bytes. Its
// previousReceiptHash is not kept: it is checked as the entry is added
// against the receipt it must link, which a log in chain order holds
// already (flagLinked, flagBroken), and kept aside (pending) otherwise.
type rec struct {
	hash    [32]byte // chain hash: SHA-256 of the receipt's JCS bytes
	seq     int64    // sequence (0 if absent or not an integer)
	iseq    int64    // issuer_sequence (0 if absent)
	issuer  uint32
	session uint32 // 0: no session_id
	flags   uint32
}

// call is what the ledger keeps of a receipt of a tool call: the SHA-256
// of its tool name and tool input hash, which an execution and its
// decision share.
type call struct {
	pos uint32
	fp  [32]byte
}

// link is an execution's decision_receipt_hash.
type link struct {
	pos  uint32
	hash [32]byte
}

// resolved is an execution whose decision_receipt_hash is the chain hash of
// an entry added before it, at dpos: its link is recs[dpos].hash (8 bytes
// instead of a link's 36). When its call fingerprint is dpos's and dpos's
// is in calls, it is not in calls itself (fp).
type resolved struct {
	pos, dpos uint32
}

// recentLinks is how many of a session's latest entries an execution's
// decision is looked for among as it is added.
const recentLinks = 4

type sessKey struct {
	issuer uint32
	name   string
}

type issuerInfo struct {
	top        chainTop // of its receipts without a session_id
	kid        string
	pub        ed25519.PublicKey // of its first entry (flagOtherKey)
	legacy     int               // receipts without issuer_sequence
	highWater  int64             // highest issuer_high_water of an issuer checkpoint
	checkpoint uint64            // its index, if hasCP
	hasCP      bool
}

type sessionInfo struct {
	issuer   uint32
	name     string
	last     uint64 // index of the receipt with the highest sequence (the first of them)
	lastSeq  int64
	issuedAt string // of that receipt
	hasLast  bool
	ended    bool
	top      chainTop // of the session's chain
	// recent holds the positions+1 of its latest entries (0: none), the
	// decisions an execution added next most likely links; not saved.
	recent [recentLinks]uint32
}

// chainTop is, for one chain (an issuer's session, or its receipts without
// a session_id), the first entry with the highest sequence added so far:
// the receipt the next sequence links, in a log that holds its chains in
// order.
type chainTop struct {
	seq  int64
	hash [32]byte
	ok   bool
}

// pendingLink is the previousReceiptHash of an entry whose predecessor was
// not settled when it was added (an entry out of chain order, or of a
// sequence already taken): analyse checks it.
type pendingLink struct {
	pos  uint32
	prev [32]byte // when the entry has flagPrevHash
}

// Flags of a rec.
const (
	flagBad        = 1 << iota // not a valid entry: nothing else is set
	flagPrevHash               // previousReceiptHash is "sha256:" and 64 hex digits
	flagCall                   // has a call record
	flagExecution              // PostToolUse or PostToolUseFailure
	flagLinkHash               // an execution whose decision_receipt_hash is a chain hash, in execs or acted
	flagDeny                   // decision "deny"
	flagIssuerCP               // an issuer checkpoint
	flagSessionEnd             // a session_end
	flagDuplicate              // the same receipt as an earlier entry (set by analysis)
	flagPreToolUse             // hook_event PreToolUse: a decision
	flagApproval               // decision "require_approval"
	flagUnenforced             // "enforced": false (observe mode; unenforced.go)
	flagUnmediated             // hook_event unmediated_call (unmediated.go)
	flagTranscript             // a transcript_hash member, not empty
	flagReconciled             // a transcript_hash of a record read whole: "sha256:…"
	// What a presented receipt's chain check reads from its logged copy
	// instead of parsing it again (presented.go).
	flagAllow      // decision "allow"
	flagRef        // a decision_receipt_hash member that is a string
	flagIDMismatch // a draft-04 payload whose issuer_id is not the kid
	flagOtherKey   // signed by another key than the first entry of its kid
	// The chain link, settled as the entry was added (link).
	flagFirst  // the first entry of its issuer, session and sequence
	flagLinked // links the first entry of its chain's previous sequence, added before it
	flagBroken // does not link it
)

func newLedger() *ledger {
	return &ledger{issuerIDs: make(map[string]uint32), sessIDs: make(map[sessKey]uint32), sessions: []sessionInfo{{}}}
}

// size is the number of log entries in the ledger.
func (l *ledger) size() uint64 { return uint64(len(l.recs)) }

// parsed is one log entry as the workers parse it, before interning.
type parsed struct {
	bad       error
	r         rec
	kid       string
	pub       ed25519.PublicKey
	prev      [32]byte // previousReceiptHash, when flagPrevHash
	session   string
	issuedAt  string
	highWater int64
	fp        [32]byte
	link      [32]byte
	hasIseq   bool
}

// parseLedgerEntry verifies one log entry (strict form, kid, Ed25519
// signature) and reads what the ledger keeps of it.
func parseLedgerEntry(leaf []byte) parsed {
	var p parsed
	e, err := receipts.ParseEntry(leaf)
	if err != nil {
		p.bad = err
		p.r.flags = flagBad
		return p
	}
	hash := e.Hash
	m := e.Payload
	str := func(k string) string { s, _ := m[k].(string); return s }
	p.r.hash = hash
	p.kid, p.pub, p.session = e.KID, e.PublicKey, Clip(e.SessionID)
	p.r.seq = payloadInt(m, "sequence")
	p.r.iseq = payloadInt(m, "issuer_sequence")
	p.hasIseq = p.r.iseq > 0
	p.issuedAt = Clip(str("issued_at"))
	if h, ok := chainHash(str("previousReceiptHash")); ok {
		p.prev, p.r.flags = h, p.r.flags|flagPrevHash
	}
	tool, input := Clip(str("tool_name")), Clip(str("tool_input_hash"))
	if tool != "" || input != "" {
		p.fp = callPrint(tool, input)
		p.r.flags |= flagCall
	}
	switch str("hook_event") {
	case receipts.PostToolUse, receipts.PostToolUseFailure:
		p.r.flags |= flagExecution
		if h, ok := chainHash(str("decision_receipt_hash")); ok {
			p.link, p.r.flags = h, p.r.flags|flagLinkHash
		}
	case receipts.PreToolUse:
		p.r.flags |= flagPreToolUse
	case receipts.UnmediatedCall:
		p.r.flags |= flagUnmediated
	}
	switch str("decision") {
	case receipts.Allow:
		p.r.flags |= flagAllow
	case receipts.Deny:
		p.r.flags |= flagDeny
	case receipts.RequireApproval:
		p.r.flags |= flagApproval
	}
	if _, ok := m["decision_receipt_hash"].(string); ok {
		p.r.flags |= flagRef
	}
	if str("spec") == receipts.Spec && str("issuer_id") != e.KID {
		p.r.flags |= flagIDMismatch
	}
	if m["enforced"] == false {
		p.r.flags |= flagUnenforced
	}
	if th := str("transcript_hash"); th != "" {
		p.r.flags |= flagTranscript
		if strings.HasPrefix(th, "sha256:") {
			p.r.flags |= flagReconciled
		}
	}
	switch str("lifecycle_event") {
	case "issuer_checkpoint":
		p.r.flags |= flagIssuerCP
		p.highWater = payloadInt(m, "issuer_high_water")
	case "session_end":
		p.r.flags |= flagSessionEnd
	}
	return p
}

// payloadInt reads an integer member as payloadFrom does: absent, or of
// the wrong type, reads as 0; past int64, clamped.
func payloadInt(m map[string]any, k string) int64 {
	n, _ := m[k].(json.Number)
	i, _ := n.Int64()
	return i
}

func itoa(n int64) string   { return strconv.FormatInt(n, 10) }
func uitoa(n uint64) string { return strconv.FormatUint(n, 10) }
func quote(s string) string { return strconv.Quote(s) }

// callPrint is what an execution and the decision it executes share: the
// tool name and the tool input hash (each clipped as a Record keeps it).
func callPrint(tool, input string) [32]byte {
	var buf [2*(64+len("…sha256:")+64) + 1]byte // both clipped (Clip): no allocation
	return sha256.Sum256(append(append(append(buf[:0], tool...), 0), input...))
}

// chainHash decodes a chain hash, "sha256:" and 64 lowercase hex digits.
func chainHash(s string) ([32]byte, bool) {
	var h [32]byte
	rest, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(rest) != 64 {
		return h, false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; 'A' <= c && c <= 'F' {
			return h, false // lowercase only
		}
	}
	if _, err := hex.Decode(h[:], []byte(rest)); err != nil {
		return h, false
	}
	return h, true
}

func hashString(h [32]byte) string { return "sha256:" + hex.EncodeToString(h[:]) }

// add appends the next log entry, at index l.size().
func (l *ledger) add(p parsed) {
	idx := l.size()
	pos := uint32(idx)
	if p.bad != nil {
		l.recs = append(l.recs, rec{flags: flagBad})
		l.bad.add(Finding{
			Kind: KindBadEntry, Index: idx,
			Message:  "log entry " + uitoa(idx) + " is not a valid Docket entry: " + p.bad.Error(),
			evidence: &Evidence{Kind: KindBadEntry, Entries: []EvidenceEntry{{Index: idx}}},
		})
		return
	}
	r := p.r
	r.issuer = l.intern(p.kid)
	is := &l.issuers[r.issuer]
	if is.pub == nil {
		is.pub = p.pub
	} else if !is.pub.Equal(p.pub) {
		r.flags |= flagOtherKey
	}
	if !p.hasIseq {
		is.legacy++
	}
	if r.flags&flagIssuerCP != 0 && p.highWater >= is.highWater {
		is.highWater, is.checkpoint, is.hasCP = p.highWater, idx, true
	}
	if p.session != "" {
		k := sessKey{r.issuer, p.session}
		id, ok := l.sessIDs[k]
		if !ok {
			id = uint32(len(l.sessions))
			l.sessIDs[k] = id
			l.sessions = append(l.sessions, sessionInfo{issuer: r.issuer, name: p.session})
		}
		r.session = id
		if r.flags&flagIssuerCP == 0 {
			ss := &l.sessions[id]
			if !ss.hasLast || r.seq > ss.lastSeq {
				ss.last, ss.lastSeq, ss.issuedAt, ss.hasLast = idx, r.seq, p.issuedAt, true
			}
			if r.flags&flagSessionEnd != 0 {
				ss.ended = true
			}
		}
	}
	l.link(&r, pos, p.prev)
	l.recs = append(l.recs, r)
	elided := false
	if r.flags&flagLinkHash != 0 {
		if d, ok := l.recent(r.session, p.link); ok {
			l.acted = append(l.acted, resolved{pos, d})
			// The execution's fingerprint is its decision's, which calls
			// holds: fp reads it there.
			dfp, stored := l.storedFP(d)
			elided = r.flags&flagCall != 0 && stored && dfp == p.fp
		} else {
			l.execs = append(l.execs, link{pos, p.link})
		}
	}
	if r.flags&flagCall != 0 && !elided {
		l.calls = append(l.calls, call{pos, p.fp})
	}
	if r.session != 0 {
		rc := &l.sessions[r.session].recent
		copy(rc[1:], rc[:recentLinks-1])
		rc[0] = pos + 1
	}
}

// recent returns the latest of the recent entries of session whose chain
// hash is h, if any.
func (l *ledger) recent(session uint32, h [32]byte) (uint32, bool) {
	if session == 0 {
		return 0, false
	}
	for _, p := range l.sessions[session].recent {
		if p != 0 && l.recs[p-1].hash == h {
			return p - 1, true
		}
	}
	return 0, false
}

// link settles the chain link of r, the entry at pos whose
// previousReceiptHash is prev: as analyse would, against the first entry
// of its chain's previous sequence, when that entry was added before it and
// r is the first of its own sequence; otherwise r is kept pending.
func (l *ledger) link(r *rec, pos uint32, prev [32]byte) {
	if r.seq < 1 {
		return // neither checked nor a predecessor (analyse)
	}
	top := &l.issuers[r.issuer].top
	if r.session != 0 {
		top = &l.sessions[r.session].top
	}
	switch {
	case !top.ok || r.seq > top.seq:
		// No entry of this chain before r has its sequence or a higher
		// one: r is the first of its sequence, and the first of the
		// previous sequence is top, if top has it.
		switch {
		case r.seq < 2:
		case top.ok && top.seq == r.seq-1 && r.flags&flagPrevHash != 0 && prev == top.hash:
			r.flags |= flagLinked
		case top.ok && top.seq == r.seq-1:
			r.flags |= flagBroken
		default:
			l.pending = append(l.pending, pendingLink{pos, prev})
		}
		*top = chainTop{seq: r.seq, hash: r.hash, ok: true}
		r.flags |= flagFirst
	case r.seq >= 2:
		l.pending = append(l.pending, pendingLink{pos, prev})
	}
}

// links reports whether r, at pos, links pr, the first entry of its
// chain's previous sequence.
func (l *ledger) links(pos uint32, r, pr *rec) bool {
	switch {
	case r.flags&flagLinked != 0:
		return true
	case r.flags&flagBroken != 0:
		return false
	}
	i, ok := slices.BinarySearchFunc(l.pending, pos, func(x pendingLink, p uint32) int { return cmp.Compare(x.pos, p) })
	return ok && r.flags&flagPrevHash != 0 && l.pending[i].prev == pr.hash
}

func (l *ledger) intern(kid string) uint32 {
	id, ok := l.issuerIDs[kid]
	if !ok {
		id = uint32(len(l.issuers))
		l.issuerIDs[kid] = id
		l.issuers = append(l.issuers, issuerInfo{kid: kid})
	}
	return id
}

// fp returns the call fingerprint of the entry at pos, if it has one:
// from calls, or, for an execution whose fingerprint was its decision's
// (add), its decision's.
func (l *ledger) fp(pos uint32) ([32]byte, bool) {
	if fp, ok := l.storedFP(pos); ok || l.recs[pos].flags&flagCall == 0 {
		return fp, ok
	}
	if d, ok := l.actedOn(pos); ok {
		return l.storedFP(d)
	}
	return [32]byte{}, false
}

func (l *ledger) storedFP(pos uint32) ([32]byte, bool) {
	i, ok := slices.BinarySearchFunc(l.calls, pos, func(c call, p uint32) int { return cmp.Compare(c.pos, p) })
	if !ok {
		return [32]byte{}, false
	}
	return l.calls[i].fp, true
}

func (l *ledger) actedOn(pos uint32) (uint32, bool) {
	i, ok := slices.BinarySearchFunc(l.acted, pos, func(x resolved, p uint32) int { return cmp.Compare(x.pos, p) })
	if !ok {
		return 0, false
	}
	return l.acted[i].dpos, true
}

// linkHash returns the decision_receipt_hash of the execution at pos,
// which has flagLinkHash.
func (l *ledger) linkHash(pos uint32) [32]byte {
	if d, ok := l.actedOn(pos); ok {
		return l.recs[d].hash
	}
	x, _ := slices.BinarySearchFunc(l.execs, pos, func(x link, p uint32) int { return cmp.Compare(x.pos, p) })
	return l.execs[x].hash
}

// byHash returns the positions of the valid entries, sorted by chain hash
// and then position: 4 bytes per entry, the index by which presented
// receipts are found (presented.go) and then analyse's permutation. It
// also cuts it into buckets by the hashes' first bits, half a byte per
// entry, so that find searches a bucket of about eight, not all.
func (l *ledger) byHash() []uint32 {
	perm := make([]uint32, 0, len(l.recs))
	for i := range l.recs {
		if l.recs[i].flags&flagBad == 0 {
			perm = append(perm, uint32(i))
		}
	}
	slices.SortFunc(perm, l.byHashCmp)
	l.bucketBits = uint(max(bits.Len(uint(len(perm))), 3) - 3)
	l.buckets = make([]uint32, 1<<l.bucketBits+1)
	b := 0
	for i, p := range perm {
		for k := l.bucket(l.recs[p].hash); b <= k; b++ {
			l.buckets[b] = uint32(i)
		}
	}
	for ; b < len(l.buckets); b++ {
		l.buckets[b] = uint32(len(perm))
	}
	return perm
}

func (l *ledger) bucket(h [32]byte) int {
	return int(binary.BigEndian.Uint64(h[:]) >> (64 - l.bucketBits) & (1<<l.bucketBits - 1))
}

func (l *ledger) byHashCmp(a, b uint32) int {
	return cmp.Or(bytes.Compare(l.recs[a].hash[:], l.recs[b].hash[:]), cmp.Compare(a, b))
}

// find returns the first position in perm (as byHash returned it) of an
// entry with chain hash h.
func (l *ledger) find(perm []uint32, h [32]byte) (uint32, bool) {
	lo, hi := 0, len(perm)
	if len(l.buckets) > 1 {
		k := l.bucket(h)
		lo, hi = int(l.buckets[k]), int(l.buckets[k+1])
	}
	i, ok := slices.BinarySearchFunc(perm[lo:hi], h, func(p uint32, h [32]byte) int { return bytes.Compare(l.recs[p].hash[:], h[:]) })
	if !ok {
		return 0, false
	}
	return perm[lo+i], true
}

// A selection says which of the ledger's receipts an audit compares: the
// issuers (nil: all) and sessions (nil: all) selected.
type selection struct {
	issuers  map[string]bool
	sessions map[string]bool
}

// A bitset holds one bit per log entry.
type bitset []uint64

func newBitset(n int) bitset       { return make(bitset, (n+63)/64) }
func (b bitset) set(i uint64)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i uint64) bool { return b[i/64]&(1<<(i%64)) != 0 }

func (l *ledger) selectedIssuer(s *selection, id uint32) bool {
	return len(s.issuers) == 0 || s.issuers[l.issuers[id].kid]
}

func (l *ledger) selected(s *selection, r *rec) bool {
	if r.flags&flagBad != 0 || !l.selectedIssuer(s, r.issuer) {
		return false
	}
	return len(s.sessions) == 0 || s.sessions[l.sessions[r.session].name]
}

func (l *ledger) record(idx uint64) *Record {
	r := &l.recs[idx]
	return &Record{Index: idx, Hash: hashString(r.hash), Issuer: l.issuers[r.issuer].kid, Session: l.sessions[r.session].name,
		Payload: Payload{Sequence: r.seq, IssuerSequence: r.iseq}}
}

// analyse adds to out what the log alone shows about the selection, in the
// order View.LogFindings lists them: bad entries and equivocation (by
// index), gaps per issuer, chain breaks and executions (by index), open
// sessions. perm is l.byHash(), which it reorders. It returns the log
// entries that were presented, and the selected
// executions that link a decision that is not a selected logged receipt
// (their indexes), for the caller to compare with what was presented.
func (l *ledger) analyse(s *selection, ps *presentedSet, perm []uint32, out *findingList) (presented bitset, unlogged []uint64) {
	n := len(l.recs)
	type indexed struct {
		idx uint64
		f   Finding
	}
	var early, late []indexed // equivocation; chain breaks and executions

	// The log entries presented: ps.at names the first entry of each hash,
	// and every entry with that hash was presented.
	presented = newBitset(n)
	if ps != nil {
		for _, at := range ps.at {
			if at > 0 {
				presented.set(uint64(at - 1))
			}
		}
	}
	// By hash (perm as byHash sorted it): duplicates (strict dedup in the
	// log makes them impossible; the first index stands).
	for i := 1; i < len(perm); i++ {
		if l.recs[perm[i]].hash == l.recs[perm[i-1]].hash {
			l.recs[perm[i]].flags |= flagDuplicate
			if presented.has(uint64(perm[i-1])) {
				presented.set(uint64(perm[i]))
			}
		}
	}
	// The selected receipts by hash, for executions.
	lookup := func(h [32]byte) (uint32, bool) {
		i, ok := slices.BinarySearchFunc(perm, h, func(p uint32, h [32]byte) int { return bytes.Compare(l.recs[p].hash[:], h[:]) })
		for ; ok && i < len(perm) && l.recs[perm[i]].hash == h; i++ {
			if r := &l.recs[perm[i]]; r.flags&flagDuplicate == 0 && l.selected(s, r) {
				return perm[i], true
			}
		}
		return 0, false
	}
	for i := range l.recs {
		r := &l.recs[i]
		if r.flags&flagExecution == 0 || r.flags&flagDuplicate != 0 || !l.selected(s, r) {
			continue
		}
		idx, pos := uint64(i), uint32(i)
		var dpos uint32
		ok := false
		if r.flags&flagLinkHash != 0 {
			dpos, ok = lookup(l.linkHash(pos))
		}
		if !ok {
			unlogged = append(unlogged, idx)
			continue
		}
		d := &l.recs[dpos]
		rfp, _ := l.fp(pos)
		dfp, _ := l.fp(dpos)
		rr := l.record(idx)
		switch {
		case d.flags&flagDeny != 0 && d.flags&flagUnenforced == 0:
			// A deny observe mode did not enforce was answered as an
			// allow, and signed so: its execution is no violation.
			// unenforcedFindings notes it.
			late = append(late, indexed{idx, Finding{Kind: KindExecutedDeny, Issuer: rr.Issuer, Session: rr.Session, Sequence: r.seq, Index: idx,
				Message: "session " + quote(rr.Session) + ": execution " + itoa(r.seq) + " executes a deny decision", records: []*Record{{Index: uint64(dpos)}, rr}}})
		case d.session != r.session || d.seq >= r.seq || dfp != rfp:
			late = append(late, indexed{idx, Finding{Kind: KindUnlinkedExecution, Issuer: rr.Issuer, Session: rr.Session, Sequence: r.seq, Index: idx,
				Message: "session " + quote(rr.Session) + ": execution " + itoa(r.seq) + " does not execute an earlier decision on the same call", records: []*Record{{Index: uint64(dpos)}, rr}}})
		}
	}

	// By issuer, session and sequence: equivocation and chain links.
	slices.SortFunc(perm, func(a, b uint32) int {
		ra, rb := &l.recs[a], &l.recs[b]
		return cmp.Or(cmp.Compare(ra.issuer, rb.issuer), cmp.Compare(ra.session, rb.session), cmp.Compare(ra.seq, rb.seq), cmp.Compare(a, b))
	})
	var prevFirst uint32 // first entry of the previous group
	havePrev := false
	for i := 0; i < len(perm); {
		first := perm[i]
		f := &l.recs[first]
		j := i + 1
		for j < len(perm) && l.recs[perm[j]].issuer == f.issuer && l.recs[perm[j]].session == f.session && l.recs[perm[j]].seq == f.seq {
			j++
		}
		if f.seq > 0 {
			for _, p := range perm[i+1 : j] {
				if b := &l.recs[p]; b.hash != f.hash && b.flags&flagDuplicate == 0 {
					sess := l.sessions[b.session].name
					early = append(early, indexed{uint64(p), l.equivocation(uint64(first), uint64(p), "session "+quote(sess)+" sequence "+itoa(b.seq))})
				}
			}
			// Chain links: each selected receipt of the group with the
			// first receipt of the group before, if that is its
			// predecessor.
			var pr *rec
			if havePrev {
				pr = &l.recs[prevFirst]
			}
			if pr != nil && f.seq > 1 && pr.issuer == f.issuer && pr.session == f.session && pr.seq == f.seq-1 {
				for _, p := range perm[i:j] {
					r := &l.recs[p]
					if r.flags&flagDuplicate != 0 || !l.selected(s, r) {
						continue
					}
					if !l.links(p, r, pr) {
						rr := l.record(uint64(p))
						late = append(late, indexed{uint64(p), Finding{Kind: KindChainBreak, Issuer: rr.Issuer, Session: rr.Session, Sequence: r.seq, Index: uint64(p),
							Message: "session " + quote(rr.Session) + ": logged receipt " + itoa(r.seq) + " does not link the logged receipt " + itoa(r.seq-1),
							records: []*Record{{Index: uint64(prevFirst)}, rr}}})
					}
				}
			}
		}
		prevFirst, havePrev = first, true
		i = j
	}

	// By issuer and issuer_sequence: equivocation and gaps.
	slices.SortFunc(perm, func(a, b uint32) int {
		ra, rb := &l.recs[a], &l.recs[b]
		return cmp.Or(cmp.Compare(ra.issuer, rb.issuer), cmp.Compare(ra.iseq, rb.iseq), cmp.Compare(a, b))
	})
	type gapSet struct {
		issuer uint32
		f      []Finding
	}
	var gaps []gapSet
	for i := 0; i < len(perm); {
		iss := l.recs[perm[i]].issuer
		j := i
		for j < len(perm) && l.recs[perm[j]].issuer == iss {
			j++
		}
		group := perm[i:j]
		var seqs []int64
		for k := 0; k < len(group); {
			first := group[k]
			f := &l.recs[first]
			m := k + 1
			for m < len(group) && l.recs[group[m]].iseq == f.iseq {
				m++
			}
			if f.iseq > 0 {
				seqs = append(seqs, f.iseq)
				for _, p := range group[k+1 : m] {
					b := &l.recs[p]
					if b.hash != f.hash && b.flags&flagDuplicate == 0 && (f.session != b.session || f.seq != b.seq || b.seq == 0) {
						early = append(early, indexed{uint64(p), l.equivocation(uint64(first), uint64(p), "issuer_sequence "+itoa(b.iseq))})
					}
				}
			}
			k = m
		}
		if l.selectedIssuer(s, iss) {
			gaps = append(gaps, gapSet{iss, l.gaps(iss, group, seqs)})
		}
		i = j
	}
	slices.SortStableFunc(early, func(a, b indexed) int { return cmp.Compare(a.idx, b.idx) })
	// As a reader in index order finds them: a chain break, then the
	// execution check, of each receipt.
	slices.SortStableFunc(late, func(a, b indexed) int {
		rank := func(x indexed) int {
			if x.f.Kind == KindChainBreak {
				return 0
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.idx, b.idx), cmp.Compare(rank(a), rank(b)))
	})
	bad := l.bad // merged in index order with equivocation
	var first findingList
	first.init()
	bi, ei := 0, 0
	for bi < len(bad.list) || ei < len(early) {
		if ei == len(early) || bi < len(bad.list) && bad.list[bi].Index < early[ei].idx {
			first.add(bad.list[bi])
			bi++
		} else {
			first.add(early[ei].f)
			ei++
		}
	}
	for kind, m := range bad.more {
		first.perKind[kind] += m.Count
		if first.more[kind] == nil {
			first.more[kind] = &Finding{Kind: kind}
		}
		first.more[kind].Count += m.Count
		first.entries[kind] += bad.entries[kind]
	}
	out.merge(&first)
	slices.SortFunc(gaps, func(a, b gapSet) int { return strings.Compare(l.issuers[a.issuer].kid, l.issuers[b.issuer].kid) })
	for _, g := range gaps {
		out.add(g.f...)
	}
	for _, x := range late {
		out.add(x.f)
	}
	for _, id := range l.selectedSessions(s) {
		ss := &l.sessions[id]
		if ss.ended {
			continue
		}
		out.add(Finding{Kind: KindOpenSession, Issuer: l.issuers[ss.issuer].kid, Session: ss.name, Sequence: ss.lastSeq, Index: ss.last, Notice: true,
			Message: "session " + quote(ss.name) + " is open: no session_end; last receipt " + itoa(ss.lastSeq) + " issued " + ss.issuedAt})
	}
	return presented, unlogged
}

// selectedSessions returns the selected sessions that hold a receipt
// other than an issuer checkpoint, by issuer and name.
func (l *ledger) selectedSessions(s *selection) []uint32 {
	var ids []uint32
	for id := 1; id < len(l.sessions); id++ {
		ss := &l.sessions[id]
		if ss.hasLast && l.selectedIssuer(s, ss.issuer) && (len(s.sessions) == 0 || s.sessions[ss.name]) {
			ids = append(ids, uint32(id))
		}
	}
	slices.SortFunc(ids, func(a, b uint32) int {
		sa, sb := &l.sessions[a], &l.sessions[b]
		return cmp.Or(strings.Compare(l.issuers[sa.issuer].kid, l.issuers[sb.issuer].kid), strings.Compare(sa.name, sb.name))
	})
	return ids
}

func (l *ledger) equivocation(a, b uint64, what string) Finding {
	ra, rb := l.record(a), l.record(b)
	return Finding{
		Kind: KindEquivocation, Issuer: ra.Issuer, Session: rb.Session, Sequence: rb.Sequence, Index: b,
		Message: "issuer " + ra.Issuer + " signed two different receipts for " + what + ": log entries " + uitoa(a) + " and " + uitoa(b),
		records: []*Record{{Index: a}, {Index: b}},
	}
}

// gaps returns the issuer_sequence gaps of issuer iss, whose entries
// sorted by issuer_sequence are group and whose distinct positive numbers
// are seqs, up to its highest logged number or its checkpoint's high-water
// mark.
func (l *ledger) gaps(iss uint32, group []uint32, seqs []int64) []Finding {
	is := &l.issuers[iss]
	var maxSeq int64
	if len(seqs) > 0 {
		maxSeq = seqs[len(seqs)-1]
	}
	at := func(n int64) *Record {
		i, ok := slices.BinarySearchFunc(group, n, func(p uint32, n int64) int { return cmp.Compare(l.recs[p].iseq, n) })
		if !ok {
			return nil
		}
		return &Record{Index: uint64(group[i])}
	}
	var out []Finding
	for _, g := range missing(seqs, max(maxSeq, is.highWater)) {
		f := Finding{Kind: KindIssuerSequenceGap, Issuer: is.kid, Sequence: g.From}
		f.Message = "issuer " + is.kid + ": issuer_sequence " + g.String() + " missing from the log (highest logged " + itoa(maxSeq) + ", issuer checkpoint high-water " + itoa(is.highWater) + ")"
		if is.hasCP && is.highWater >= g.To {
			f.records = []*Record{{Index: is.checkpoint}}
			if g.To >= maxSeq {
				f.Kind = KindBelowHighWater
			}
		}
		if r := at(g.From - 1); r != nil {
			f.records = append(f.records, r)
		}
		if g.To < maxSeq {
			if r := at(g.To + 1); r != nil {
				f.records = append(f.records, r)
			}
		}
		out = append(out, f)
	}
	return out
}
