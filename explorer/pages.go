package explorer

import (
	"bytes"
	"context"
	"database/sql"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/internal/plural"
)

// Limits on what one page lists.
const (
	pageRows    = 50   // entries on a page of entries
	sessionRows = 100  // receipts on a page of a session
	issuerList  = 50   // issuers on a page of issuers
	indexPage   = 1000 // entries in a page of an issuer's index.json
	gapsShown   = 100  // runs of missing issuer_sequence on an issuer's page
	chartHours  = 48   // hours the decisions chart spans
	chartTop    = 8    // issuers the per-issuer chart shows
)

// jsonlPage is how many entries a page of a JSONL download holds. Tests
// make it smaller.
var jsonlPage = 10_000

// csp is the Content Security Policy of every answer: nothing but the
// same-origin stylesheet, no script, forms only to the explorer itself.
const csp = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func (e *Explorer) routes() {
	m := e.mux
	m.HandleFunc("GET /{$}", e.home)
	m.HandleFunc("GET /style.css", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
		w.Header().Set("Cache-Control", "max-age=3600")
		w.Write([]byte(styleCSS))
	})
	m.HandleFunc("GET /health", e.health)
	m.HandleFunc("GET /entry/{n}", e.entry)
	m.HandleFunc("GET /entry/{n}/entry.json", e.entryDownload)
	m.HandleFunc("GET /entry/{n}/proof.tlog-proof", e.proofDownload)
	m.HandleFunc("GET /receipt/{hash}", e.receipt)
	m.HandleFunc("GET /issuers", e.issuers)
	m.HandleFunc("GET /issuer/{kid}", e.issuer)
	m.HandleFunc("GET /issuer/{kid}/index.json", e.issuerIndex)
	m.HandleFunc("GET /session/{id}", e.session)
	m.HandleFunc("GET /session/{id}/receipts.jsonl", e.sessionDownload)
	m.HandleFunc("GET /search", e.search)
	m.HandleFunc("GET /search.jsonl", e.searchDownload)
	m.HandleFunc("GET /evidence", e.evidence)
	m.HandleFunc("POST /evidence", e.evidence)
	m.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
}

func (e *Explorer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	e.mux.ServeHTTP(w, r)
}

// pageView returns the view a page shows and the status it is served
// with, or answers the request itself (and returns nil) when there is no
// verified view to show yet.
func (e *Explorer) pageView(w http.ResponseWriter) (*view, *status, int) {
	v, st := e.current()
	if v.cp == nil {
		if st == nil || st.err == nil {
			w.Header().Set("Retry-After", "1")
			httpError(w, http.StatusServiceUnavailable, "the log's checkpoint is being read; try again in a moment")
		} else {
			httpError(w, http.StatusBadGateway, "the log could not be read or verified: "+st.public)
		}
		return nil, st, 0
	}
	code := http.StatusOK
	if st != nil && st.err != nil {
		if v.size == 0 {
			httpError(w, http.StatusBadGateway, "the log could not be read or verified: "+st.public)
			return nil, st, 0
		}
		code = http.StatusBadGateway
	}
	return v, st, code
}

// downloadView is pageView for a download, which is served only when
// the latest refresh verified.
func (e *Explorer) downloadView(w http.ResponseWriter) *view {
	v, _, code := e.pageView(w)
	if v != nil && code != http.StatusOK {
		httpError(w, code, "the log could not be read or verified")
		return nil
	}
	return v
}

// progress is what a page says of how far verification has got.
type progress struct {
	Verified, Size uint64
	Percent        string
	Err            string
	Done           bool
}

func progressOf(v *view, st *status) progress {
	p := progress{Verified: v.size, Size: v.target, Done: v.size >= v.target}
	if v.target > 0 {
		p.Percent = strconv.FormatFloat(100*float64(v.size)/float64(v.target), 'f', 1, 64)
	}
	if st != nil && st.err != nil {
		p.Err = st.public
	}
	return p
}

func (e *Explorer) health(w http.ResponseWriter, r *http.Request) {
	v, st := e.current()
	// verified_since_start: what this process verified itself; the rest
	// of "verified" it had in its index.
	body := map[string]any{"verified": v.size, "checkpoint_size": v.target, "verified_since_start": e.verified.Load()}
	code := http.StatusOK
	switch {
	case st != nil && st.err != nil:
		code, body["status"], body["error"] = http.StatusServiceUnavailable, "failing", st.public
	case v.cp == nil:
		code, body["status"] = http.StatusServiceUnavailable, "starting"
	case v.size < v.target:
		body["status"] = "catching_up"
	default:
		body["status"] = "ok"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body)
}

// An entryRow is an entry as pages list it.
type entryRow struct {
	Index     uint64
	Hash      string
	Issuer    string
	SessionID int64
	Session   string
	Seq       int64
	ISeq      int64
	Kind      string
	Event     string
	Tool      string
	Decision  string
	Reason    string
	Policies  string
	Issued    string
	Prev      string
	DecHash   string
	Enforced  bool
	Err       string
	// PrevIndex and DecIndex are the log indexes of the previous receipt
	// and of the decision an execution executed, -1 when not in the log.
	PrevIndex int64
	DecIndex  int64
}

const rowColumns = `e.idx, e.hash, coalesce(i.kid, ''), coalesce(e.session, 0), coalesce(s.sid, ''), coalesce(e.seq, 0), coalesce(e.iseq, 0),
	e.kind, coalesce(e.event, ''), coalesce(e.tool, ''), coalesce(e.decision, ''), coalesce(e.reason, ''), coalesce(e.policies, ''),
	coalesce(e.issued, ''), e.prev, e.dech, coalesce(e.enforced, 1), coalesce(e.err, '')
	FROM entries e LEFT JOIN issuers i ON i.id = e.issuer LEFT JOIN sessions s ON s.id = e.session`

func scanRows(rows *sql.Rows) ([]*entryRow, error) {
	defer rows.Close()
	var out []*entryRow
	for rows.Next() {
		var r entryRow
		var hash, prev, dech []byte
		var enforced int
		if err := rows.Scan(&r.Index, &hash, &r.Issuer, &r.SessionID, &r.Session, &r.Seq, &r.ISeq, &r.Kind, &r.Event, &r.Tool,
			&r.Decision, &r.Reason, &r.Policies, &r.Issued, &prev, &dech, &enforced, &r.Err); err != nil {
			return nil, err
		}
		r.Hash, r.Prev, r.DecHash, r.Enforced = hashRef(hash), hashRef(prev), hashRef(dech), enforced != 0
		r.PrevIndex, r.DecIndex = -1, -1
		out = append(out, &r)
	}
	return out, rows.Err()
}

// Headline is the entry's one-line summary: "DENY · Read · secrets-by-name · 08:55:15Z".
func (r *entryRow) Headline() string {
	parts := r.summary()
	if t := clock(r.Issued); t != "" {
		parts = append(parts, t)
	}
	return strings.Join(nonEmpty(parts), " · ")
}

// Summary is the headline without the time, for lists that show the time
// in a column of its own: "DENY · Read · secrets-by-name".
func (r *entryRow) Summary() string { return strings.Join(nonEmpty(r.summary()), " · ") }

func (r *entryRow) summary() []string {
	var parts []string
	switch r.Kind {
	case kindBad:
		return []string{"INVALID ENTRY", r.Err}
	case kindLifecycle:
		parts = append(parts, strings.ToUpper(strings.ReplaceAll(r.Event, "_", " ")))
	case kindUnmediated:
		parts = append(parts, "FINDING: UNMEDIATED CALL", r.Tool)
	case kindExecution:
		label := "EXECUTION"
		if r.Event == "PostToolUseFailure" {
			label = "EXECUTION (FAILED)"
		}
		parts = append(parts, label, r.Tool, "of "+decisionWord(r.Decision))
	default:
		d := decisionWord(r.Decision)
		if !r.Enforced {
			d += " (NOT ENFORCED)"
		}
		parts = append(parts, d, r.Tool)
		if r.Policies != "" {
			parts = append(parts, r.Policies)
		} else if r.Reason != "" {
			parts = append(parts, r.Reason)
		}
	}
	return parts
}

func nonEmpty(ss []string) []string {
	out := ss[:0]
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func decisionWord(d string) string {
	switch d {
	case "require_approval":
		return "ASK"
	case "":
		return "NO DECISION"
	}
	return strings.ToUpper(d)
}

// Class is the row's CSS class: denies and findings stand out.
func (r *entryRow) Class() string {
	switch {
	case r.Kind == kindBad || r.Kind == kindUnmediated:
		return "finding"
	case r.Kind == kindExecution:
		return "exec"
	case r.Kind == kindDecision && !r.Enforced:
		return "observe"
	case r.Kind == kindDecision && r.Decision == "deny":
		return "deny"
	case r.Kind == kindDecision && outcome(r.Decision) == "ask":
		return "ask"
	}
	return ""
}

// Time is the receipt's issued_at as a page shows it.
func (r *entryRow) Time() string {
	t, err := time.Parse(time.RFC3339Nano, r.Issued)
	if err != nil {
		return r.Issued
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

func clock(issued string) string {
	t, err := time.Parse(time.RFC3339Nano, issued)
	if err != nil {
		return ""
	}
	return t.UTC().Format("15:04:05Z")
}

// A filter selects entries: the search form's fields.
type filter struct {
	Q, Issuer, Session, Tool, Decision, Kind, From, To string
}

var kinds = map[string]bool{kindDecision: true, kindExecution: true, kindLifecycle: true, kindUnmediated: true, kindBad: true}

func filterOf(q url.Values) filter {
	get := func(k string) string { return strings.TrimSpace(q.Get(k)) }
	return filter{Q: get("q"), Issuer: get("issuer"), Session: get("session"), Tool: get("tool"), Decision: get("decision"),
		Kind: get("kind"), From: get("from"), To: get("to")}
}

// query returns f's values as URL query parameters.
func (f filter) query() url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"q": f.Q, "issuer": f.Issuer, "session": f.Session, "tool": f.Tool, "decision": f.Decision,
		"kind": f.Kind, "from": f.From, "to": f.To} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q
}

// where returns f as an SQL condition and its arguments, or why f is not
// a filter.
func (f filter) where() (string, []any, error) {
	var conds []string
	var args []any
	add := func(c string, a ...any) { conds = append(conds, c); args = append(args, a...) }
	if f.Q != "" {
		switch {
		case strings.HasPrefix(f.Q, "sha256:"):
			h, ok := parseRef(f.Q)
			if !ok {
				return "", nil, errors.New("a receipt hash is sha256: and 64 hex digits")
			}
			c, a := byHash(h)
			add(c, a...)
		case isDigits(f.Q):
			n, err := strconv.ParseUint(f.Q, 10, 63)
			if err != nil {
				return "", nil, errors.New("the leaf index is too large")
			}
			add("e.idx = ?", n)
		case strings.HasPrefix(f.Q, "sb:issuer:"):
			add("e.issuer = (SELECT id FROM issuers WHERE kid = ?)", f.Q)
		default:
			add("e.session IN (SELECT id FROM sessions WHERE sid = ?)", f.Q)
		}
	}
	if f.Issuer != "" {
		add("e.issuer = (SELECT id FROM issuers WHERE kid = ?)", f.Issuer)
	}
	if f.Session != "" {
		add("e.session IN (SELECT id FROM sessions WHERE sid = ?)", f.Session)
	}
	if f.Tool != "" {
		// With a rare kind or decision, its partial index finds fewer rows
		// than the tool's: "+" keeps SQLite from choosing the tool's.
		tool := "e.tool = ?"
		if f.Kind == kindUnmediated || f.Kind == kindBad || f.Decision == "not_enforced" {
			tool = "+e.tool = ?"
		}
		add(tool, f.Tool)
	}
	// Kinds and decisions are written as literals (from the lists above,
	// never the query's text): SQLite uses a partial index only for a
	// query that names its condition as written in the schema.
	switch f.Decision {
	case "":
	case "allow":
		add("e.kind = 'decision' AND e.decision = 'allow'")
	case "deny":
		add("e.kind = 'decision' AND e.decision = 'deny'")
	case "ask", "require_approval":
		add("e.kind = 'decision' AND e.decision IN ('require_approval', 'ask')")
	case "not_enforced":
		add("e.kind = 'decision' AND e.enforced = 0")
	default:
		return "", nil, errors.New("decision is one of allow, deny, ask, not_enforced")
	}
	if f.Kind != "" {
		if !kinds[f.Kind] {
			return "", nil, errors.New("kind is one of decision, execution, lifecycle, unmediated, bad")
		}
		add("e.kind = '" + f.Kind + "'")
	}
	for _, b := range []struct {
		v, op, bound string
		end          bool
	}{
		// Only the bundles whose span reaches into the range can hold its
		// entries: bound the scan of the log by the first and last.
		{f.From, ">=", "e.idx >= coalesce((SELECT min(bundle) FROM spans WHERE hi >= ?), 1 << 50) * 256", false},
		{f.To, "<", "e.idx < coalesce((SELECT max(bundle) FROM spans WHERE lo < ?) + 1, 0) * 256", true},
	} {
		if b.v == "" {
			continue
		}
		t, err := parseTime(b.v, b.end)
		if err != nil {
			return "", nil, err
		}
		add("e.at "+b.op+" ? AND e.at > 0 AND "+b.bound, t.UnixMilli(), t.UnixMilli())
	}
	if len(conds) == 0 {
		return "1", nil, nil
	}
	return strings.Join(conds, " AND "), args, nil
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// parseTime reads a time as a form gives it (2006-01-02T15:04), in RFC
// 3339, or a date; a date that ends a range ends with its day.
func parseTime(s string, end bool) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time (2006-01-02T15:04, UTC)", clip(s, 40))
}

// A pager is a page of entries in log order, newest first, with the
// cursors of its neighbours.
type pager struct {
	Rows           []*entryRow
	Newer, Older   string // query strings, "" when there is none
	First, Last    uint64
	HasNewer, More bool
}

// list returns the page of entries matching cond below v's size, newest
// first, from the query's cursor (before=N: below N; after=N: above N).
func (e *Explorer) list(ctx context.Context, v *view, q url.Values, cond string, args []any, keep url.Values) (*pager, error) {
	var cursor string
	var cargs []any
	asc := false
	if s := q.Get("after"); s != "" {
		n, err := strconv.ParseUint(s, 10, 63)
		if err != nil {
			return nil, errBadCursor
		}
		cursor, cargs, asc = "e.idx > ?", []any{n}, true
	} else if s := q.Get("before"); s != "" {
		n, err := strconv.ParseUint(s, 10, 63)
		if err != nil {
			return nil, errBadCursor
		}
		cursor, cargs = "e.idx < ?", []any{n}
	} else {
		cursor = "1"
	}
	order := "DESC"
	if asc {
		order = "ASC"
	}
	all := append(append(append([]any{}, args...), cargs...), v.size, pageRows+1)
	rows, err := e.idx.db.QueryContext(ctx, "SELECT "+rowColumns+" WHERE ("+cond+") AND "+cursor+" AND e.idx < ? ORDER BY e.idx "+order+" LIMIT ?", all...)
	if err != nil {
		return nil, err
	}
	rs, err := scanRows(rows)
	if err != nil {
		return nil, err
	}
	p := &pager{}
	more := len(rs) > pageRows
	if more {
		rs = rs[:pageRows]
	}
	if asc {
		for i, j := 0, len(rs)-1; i < j; i, j = i+1, j-1 {
			rs[i], rs[j] = rs[j], rs[i]
		}
		p.HasNewer, p.More = more, len(rs) > 0
	} else {
		p.More, p.HasNewer = more, cursor != "1" && len(rs) > 0
	}
	p.Rows = rs
	if len(rs) > 0 {
		p.First, p.Last = rs[0].Index, rs[len(rs)-1].Index
		older, newer := cloneValues(keep), cloneValues(keep)
		older.Set("before", fmt.Sprint(p.Last))
		newer.Set("after", fmt.Sprint(p.First))
		if p.More {
			p.Older = "?" + older.Encode()
		}
		if p.HasNewer {
			p.Newer = "?" + newer.Encode()
		}
	}
	return p, nil
}

var errBadCursor = errors.New("before and after are entry numbers")

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// A witnessRow is a witness of the policy as the home page lists it.
type witnessRow struct {
	Name     string
	Key      string // the name of its key
	Cosigned bool
	Latest   int64
}

func (e *Explorer) witnessRows(ctx context.Context, v *view) ([]witnessRow, string, error) {
	p := e.cfg.Verifier.Policy()
	if p == nil || !e.cfg.Verifier.Witnessed() {
		return nil, "", nil
	}
	latest := map[string]int64{}
	rows, err := e.idx.db.QueryContext(ctx, `SELECT name, size FROM witnesses`)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		var s int64
		if err := rows.Scan(&n, &s); err != nil {
			return nil, "", err
		}
		latest[n] = s
	}
	var out []witnessRow
	for _, w := range p.Witnesses {
		n, err := note.Open(v.cp, note.VerifierList(w.Verifier()))
		out = append(out, witnessRow{Name: w.Name, Key: w.Verifier().Name(), Cosigned: err == nil && len(n.Sigs) == 1, Latest: latest[w.Name]})
	}
	quorum := p.Quorum
	for _, g := range p.Groups {
		if g.Name == p.Quorum {
			quorum = fmt.Sprintf("%s: %d of %s", g.Name, g.K, strings.Join(g.Members, ", "))
		}
	}
	return out, quorum, rows.Err()
}

type issuerRow struct {
	KID                 string
	N, Allow, Deny, Ask int64
}

func (e *Explorer) topIssuers(ctx context.Context, after string, n int) ([]issuerRow, error) {
	q := `SELECT kid, n, allow_n, deny_n, ask_n FROM issuers WHERE n > 0 ORDER BY n DESC, kid LIMIT ?`
	args := []any{n}
	if after != "\x00" {
		q = `SELECT kid, n, allow_n, deny_n, ask_n FROM issuers WHERE n > 0 AND kid > ? ORDER BY kid LIMIT ?`
		args = []any{after, n}
	}
	rows, err := e.idx.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []issuerRow
	for rows.Next() {
		var r issuerRow
		if err := rows.Scan(&r.KID, &r.N, &r.Allow, &r.Deny, &r.Ask); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (e *Explorer) home(w http.ResponseWriter, r *http.Request) {
	v, st, code := e.pageView(w)
	if v == nil {
		return
	}
	ctx := r.Context()
	list, err := e.list(ctx, v, r.URL.Query(), "1", nil, url.Values{})
	if err != nil {
		e.dbError(w, err)
		return
	}
	witnesses, quorum, err := e.witnessRows(ctx, v)
	if err != nil {
		e.dbError(w, err)
		return
	}
	issuers, err := e.topIssuers(ctx, "\x00", chartTop)
	if err != nil {
		e.dbError(w, err)
		return
	}
	hourly, err := e.hourlyChart(ctx, 0)
	if err != nil {
		e.dbError(w, err)
		return
	}
	kinds, err := e.idx.kindCounts(ctx)
	if err != nil {
		e.dbError(w, err)
		return
	}
	findings := struct{ Bad, Unmediated, NotEnforced int64 }{kinds[kindBad], kinds[kindUnmediated], kinds[notEnforced]}
	render(w, code, "home", map[string]any{
		"Progress": progressOf(v, st), "Checkpoint": v.cpInfo, "Witnessed": e.cfg.Verifier.Witnessed(),
		"Root": hex.EncodeToString(v.cpInfo.Root), "Note": string(v.cp), "List": list, "Witnesses": witnesses, "Quorum": quorum,
		"Issuers": issuers, "Hourly": hourly, "IssuerChart": issuerChart(issuers), "Findings": findings,
	})
}

func (e *Explorer) issuers(w http.ResponseWriter, r *http.Request) {
	v, st, code := e.pageView(w)
	if v == nil {
		return
	}
	rows, err := e.topIssuers(r.Context(), r.URL.Query().Get("after"), issuerList+1)
	if err != nil {
		e.dbError(w, err)
		return
	}
	next := ""
	if len(rows) > issuerList {
		rows = rows[:issuerList]
		next = "?" + url.Values{"after": {rows[len(rows)-1].KID}}.Encode()
	}
	render(w, code, "issuers", map[string]any{"Progress": progressOf(v, st), "Issuers": rows, "Next": next})
}

func (e *Explorer) dbError(w http.ResponseWriter, err error) {
	if errors.Is(err, errBadCursor) {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	e.cfg.Logger.Warn("explorer index", "err", err)
	httpError(w, http.StatusInternalServerError, "reading the explorer's index failed")
}

// fetchSlot waits for a turn to read the log, as long as ctx allows; when
// none comes it answers the request with 503.
func (e *Explorer) fetchSlot(ctx context.Context, w http.ResponseWriter) (release func(), ok bool) {
	select {
	case e.fetches <- struct{}{}:
		return func() { <-e.fetches }, true
	case <-ctx.Done():
		httpError(w, http.StatusServiceUnavailable, "too many pages are reading the log; try again")
		return nil, false
	}
}

// entryNumber reads the {n} of the path, answering the request when it is
// not an entry of the verified prefix.
func entryNumber(w http.ResponseWriter, r *http.Request, v *view, code int) (uint64, bool) {
	n, err := strconv.ParseUint(r.PathValue("n"), 10, 64)
	if err != nil {
		httpError(w, http.StatusBadRequest, "the entry number is not a number")
		return 0, false
	}
	switch {
	case n >= v.target:
		httpError(w, http.StatusNotFound, fmt.Sprintf("the log has %d entries", v.target))
		return 0, false
	case n >= v.size && code != http.StatusOK:
		httpError(w, code, fmt.Sprintf("entry %d could not be read or verified: %d of the log's %d entries are", n, v.size, v.target))
		return 0, false
	case n >= v.size:
		w.Header().Set("Retry-After", "5")
		httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("entry %d is not verified yet: %d of the log's %d entries are", n, v.size, v.target))
		return 0, false
	}
	return n, true
}

// readLeaf reads entry n of the log and checks it is the leaf the index
// verified.
func (e *Explorer) readLeaf(ctx context.Context, v *view, n uint64, r *leafReader) ([]byte, error) {
	var want []byte
	if err := e.idx.db.QueryRowContext(ctx, `SELECT leaf FROM entries WHERE idx = ?`, n).Scan(&want); err != nil {
		return nil, err
	}
	leaf, err := r.read(ctx, n)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(rfc6962.DefaultHasher.HashLeaf(leaf), want) {
		return nil, &refreshError{fmt.Sprintf("the log now serves another entry %d than the one verified", n), errors.New("leaf changed")}
	}
	return leaf, nil
}

// A leafReader reads leaves of the tree of size size, one entry bundle at
// a time.
type leafReader struct {
	f      Fetcher
	size   uint64
	bundle uint64
	leaves [][]byte
}

func (l *leafReader) read(ctx context.Context, n uint64) ([]byte, error) {
	if n >= l.size {
		return nil, fmt.Errorf("entry %d is beyond the tree of size %d", n, l.size)
	}
	if b := n / 256; l.leaves == nil || b != l.bundle {
		p := partial(b, l.size)
		data, err := l.f.ReadEntryBundle(ctx, b, p)
		if err != nil {
			return nil, fmt.Errorf("reading entry bundle %d: %w", b, err)
		}
		leaves, err := splitBundle(data)
		if err != nil {
			return nil, fmt.Errorf("entry bundle %d: %w", b, err)
		}
		if want := int(p); (p == 0 && len(leaves) < 256) || len(leaves) < want {
			return nil, fmt.Errorf("entry bundle %d has %d entries", b, len(leaves))
		}
		l.bundle, l.leaves = b, leaves
	}
	return l.leaves[n%256], nil
}

// partial is the width of bundle b of a tree of size size, 0 when full.
func partial(b, size uint64) uint8 {
	if (b+1)*256 <= size {
		return 0
	}
	return uint8(size - b*256)
}

func (e *Explorer) entryRow(ctx context.Context, v *view, n uint64) (*entryRow, error) {
	rows, err := e.idx.db.QueryContext(ctx, "SELECT "+rowColumns+" WHERE e.idx = ?", n)
	if err != nil {
		return nil, err
	}
	rs, err := scanRows(rows)
	if err != nil || len(rs) == 0 {
		return nil, errors.Join(err, errors.New("entry not in the index"))
	}
	r := rs[0]
	if err := e.resolve(ctx, v, r); err != nil {
		return nil, err
	}
	return r, nil
}

// resolve finds the log indexes of r's previous receipt and of the
// decision it executed.
func (e *Explorer) resolve(ctx context.Context, v *view, r *entryRow) error {
	for _, x := range []struct {
		ref string
		to  *int64
	}{{r.Prev, &r.PrevIndex}, {r.DecHash, &r.DecIndex}} {
		h, ok := parseRef(x.ref)
		if !ok {
			continue
		}
		err := e.idx.firstByHash(ctx, h, v.size).Scan(x.to)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	return nil
}

func (e *Explorer) entry(w http.ResponseWriter, r *http.Request) {
	v, st, code := e.pageView(w)
	if v == nil {
		return
	}
	n, ok := entryNumber(w, r, v, code)
	if !ok {
		return
	}
	ctx := r.Context()
	row, err := e.entryRow(ctx, v, n)
	if err != nil {
		e.dbError(w, err)
		return
	}
	release, ok := e.fetchSlot(ctx, w)
	if !ok {
		return
	}
	defer release()
	size := v.cpInfo.Size
	leaf, err := e.readLeaf(ctx, v, n, &leafReader{f: e.cfg.Fetcher, size: size})
	if err != nil {
		e.cfg.Logger.Warn("explorer entry", "n", n, "err", err)
		httpError(w, http.StatusBadGateway, fmt.Sprintf("reading entry %d: %s", n, publicError(err)))
		return
	}
	hashes, err := e.inclusion(ctx, n, size)
	if err != nil {
		e.cfg.Logger.Warn("explorer inclusion proof", "n", n, "err", err)
	}
	included := err == nil && proof.VerifyInclusion(rfc6962.DefaultHasher, n, size, rfc6962.DefaultHasher.HashLeaf(leaf), hashes, v.cpInfo.Root) == nil
	var pretty bytes.Buffer
	var entry struct {
		PublicKey string          `json:"public_key"`
		Receipt   json.RawMessage `json:"receipt"`
	}
	if json.Unmarshal(leaf, &entry) == nil {
		json.Indent(&pretty, entry.Receipt, "", "  ")
	}
	_, recErr := audit.ParseRecord(n, leaf)
	proofText := make([]string, len(hashes))
	for i, h := range hashes {
		proofText[i] = hex.EncodeToString(h)
	}
	if !included || recErr != nil {
		code = http.StatusBadGateway
	}
	var prev, next int64 = int64(n) - 1, int64(n) + 1
	if next >= int64(v.size) {
		next = -1
	}
	render(w, code, "entry", map[string]any{
		"Progress": progressOf(v, st), "N": n, "Size": size, "Included": included, "Proof": proofText, "Receipt": pretty.String(),
		"PublicKey": entry.PublicKey, "Row": row, "RecordErr": recErr, "LeafHash": hex.EncodeToString(rfc6962.DefaultHasher.HashLeaf(leaf)),
		"Prev": prev, "Next": next,
	})
}

func (e *Explorer) inclusion(ctx context.Context, n, size uint64) ([][]byte, error) {
	pb, err := audit.NewProofBuilder(ctx, e.cfg.Fetcher, size)
	if err != nil {
		return nil, err
	}
	return pb.InclusionProof(ctx, n)
}

func (e *Explorer) entryDownload(w http.ResponseWriter, r *http.Request) {
	e.download(w, r, func(ctx context.Context, v *view, n uint64, leaf []byte) ([]byte, string, error) {
		return append(leaf, '\n'), fmt.Sprintf("entry-%d.json", n), nil
	})
}

func (e *Explorer) proofDownload(w http.ResponseWriter, r *http.Request) {
	e.download(w, r, func(ctx context.Context, v *view, n uint64, leaf []byte) ([]byte, string, error) {
		hashes, err := e.inclusion(ctx, n, v.cpInfo.Size)
		if err != nil {
			return nil, "", err
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, n, v.cpInfo.Size, rfc6962.DefaultHasher.HashLeaf(leaf), hashes, v.cpInfo.Root); err != nil {
			return nil, "", &refreshError{"the log's inclusion proof does not verify", err}
		}
		return tlogProof(n, hashes, v.cp), fmt.Sprintf("entry-%d.tlog-proof", n), nil
	})
}

// download answers with what body makes of entry {n}'s leaf, verified.
func (e *Explorer) download(w http.ResponseWriter, r *http.Request, body func(ctx context.Context, v *view, n uint64, leaf []byte) ([]byte, string, error)) {
	v := e.downloadView(w)
	if v == nil {
		return
	}
	n, ok := entryNumber(w, r, v, http.StatusOK)
	if !ok {
		return
	}
	ctx := r.Context()
	release, ok := e.fetchSlot(ctx, w)
	if !ok {
		return
	}
	defer release()
	leaf, err := e.readLeaf(ctx, v, n, &leafReader{f: e.cfg.Fetcher, size: v.cpInfo.Size})
	var b []byte
	var name string
	if err == nil {
		b, name, err = body(ctx, v, n, leaf)
	}
	if err != nil {
		e.cfg.Logger.Warn("explorer download", "n", n, "err", err)
		httpError(w, http.StatusBadGateway, fmt.Sprintf("entry %d: %s", n, publicError(err)))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.Write(b)
}

func (e *Explorer) receipt(w http.ResponseWriter, r *http.Request) {
	v, _, _ := e.pageView(w)
	if v == nil {
		return
	}
	h, ok := parseRef(r.PathValue("hash"))
	if !ok {
		httpError(w, http.StatusBadRequest, "a receipt hash is sha256: and 64 hex digits")
		return
	}
	var n uint64
	err := e.idx.firstByHash(r.Context(), h, v.size).Scan(&n)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		msg := "no receipt of this hash in the verified entries of the log"
		if v.size < v.target {
			msg += fmt.Sprintf(" (%d of %d verified so far)", v.size, v.target)
		}
		httpError(w, http.StatusNotFound, msg)
	case err != nil:
		e.dbError(w, err)
	default:
		http.Redirect(w, r, fmt.Sprintf("/entry/%d", n), http.StatusSeeOther)
	}
}

// An issuerSummary is a summary and how many runs of missing
// issuer_sequence it leaves out.
type issuerSummary struct {
	s        *audit.IndexSummary
	moreGaps int
}

// summary is what `docket verify-index` concludes of the issuer's whole
// index, computed in the database: the count, the runs of missing
// issuer_sequence, the high-water mark.
func (e *Explorer) summary(ctx context.Context, v *view, issuer int64) (*audit.IndexSummary, int, error) {
	t := e.tallies.get(issuer)
	t.mu.Lock()
	defer t.mu.Unlock()
	// A tally already past v (a page of a newer view came first) or with
	// too many holes to keep: count in the database.
	if !t.tooMany && t.size <= v.size {
		if err := t.catchUp(ctx, e.idx, issuer, v.size); err != nil {
			return nil, 0, err
		}
		if !t.tooMany {
			s, more := t.summary()
			return s, more, nil
		}
	}
	return e.recount(ctx, v, issuer)
}

// recount is summary computed from all the issuer's rows.
func (e *Explorer) recount(ctx context.Context, v *view, issuer int64) (*audit.IndexSummary, int, error) {
	if c, ok := e.summaries.get(v.size, issuer); ok {
		return c.s, c.moreGaps, nil
	}
	s := &audit.IndexSummary{}
	var maxSeq, distinct int64
	err := e.idx.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(iseq <= 0), 0), coalesce(max(iseq), 0), count(DISTINCT CASE WHEN iseq > 0 THEN iseq END),
		coalesce(max(CASE WHEN event = 'issuer_checkpoint' AND iseq > 0 THEN hw END), 0) FROM entries WHERE issuer = ? AND idx < ?`, issuer, v.size).
		Scan(&s.Entries, &s.Legacy, &maxSeq, &distinct, &s.HighWater)
	if err != nil {
		return nil, 0, err
	}
	moreGaps := 0
	if distinct < maxSeq {
		rows, err := e.idx.db.QueryContext(ctx, `SELECT iseq, lag FROM (SELECT iseq, lag(iseq, 1, 0) OVER (ORDER BY iseq) AS lag
			FROM (SELECT DISTINCT iseq FROM entries WHERE issuer = ? AND idx < ? AND iseq > 0)) WHERE iseq > lag + 1`, issuer, v.size)
		if err != nil {
			return nil, 0, err
		}
		for rows.Next() {
			var seq, lag int64
			if err := rows.Scan(&seq, &lag); err != nil {
				rows.Close()
				return nil, 0, err
			}
			if len(s.Gaps) < gapsShown {
				s.Gaps = append(s.Gaps, audit.Gap{From: lag + 1, To: seq - 1})
			} else {
				moreGaps++
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, 0, err
		}
	}
	s.Complete = distinct
	if len(s.Gaps) > 0 {
		s.Complete = s.Gaps[0].From - 1
	}
	e.summaries.put(v.size, issuer, issuerSummary{s, moreGaps})
	return s, moreGaps, nil
}

func (e *Explorer) issuerID(ctx context.Context, w http.ResponseWriter, kid string) (int64, bool) {
	var id int64
	err := e.idx.db.QueryRowContext(ctx, `SELECT id FROM issuers WHERE kid = ? AND n > 0`, kid).Scan(&id)
	return id, e.found(w, err, "no entry of this issuer in the verified entries of the log")
}

// found reports whether a lookup found its row, answering the request
// when it did not: 404 saying notFound, or 500 when the index failed.
func (e *Explorer) found(w http.ResponseWriter, err error, notFound string) bool {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		httpError(w, http.StatusNotFound, notFound)
		return false
	case err != nil:
		e.dbError(w, err)
		return false
	}
	return true
}

func (e *Explorer) issuer(w http.ResponseWriter, r *http.Request) {
	v, st, code := e.pageView(w)
	if v == nil {
		return
	}
	ctx := r.Context()
	kid := r.PathValue("kid")
	id, ok := e.issuerID(ctx, w, kid)
	if !ok {
		return
	}
	sum, moreGaps, err := e.summary(ctx, v, id)
	if err != nil {
		e.dbError(w, err)
		return
	}
	list, err := e.list(ctx, v, r.URL.Query(), "e.issuer = ?", []any{id}, url.Values{})
	if err != nil {
		e.dbError(w, err)
		return
	}
	hourly, err := e.hourlyChart(ctx, id)
	if err != nil {
		e.dbError(w, err)
		return
	}
	render(w, code, "issuer", map[string]any{"Progress": progressOf(v, st), "KID": kid, "List": list, "Summary": sum,
		"MoreGaps": moreGaps, "Size": v.size, "Hourly": hourly, "IndexPage": indexPage,
		"Search": "/search?" + url.Values{"issuer": {kid}}.Encode()})
}

func (e *Explorer) issuerIndex(w http.ResponseWriter, r *http.Request) {
	v := e.downloadView(w)
	if v == nil {
		return
	}
	ctx := r.Context()
	kid := r.PathValue("kid")
	id, ok := e.issuerID(ctx, w, kid)
	if !ok {
		return
	}
	after, ok := afterIndex(w, r)
	if !ok {
		return
	}
	rows, err := e.idx.db.QueryContext(ctx, `SELECT idx, coalesce(iseq, 0), coalesce(seq, 0), CASE WHEN event = 'issuer_checkpoint' THEN coalesce(hw, 0) ELSE 0 END,
		(SELECT sid FROM sessions WHERE id = e.session) FROM entries e WHERE issuer = ? AND idx > ? AND idx < ? ORDER BY idx LIMIT ?`, id, after, v.size, indexPage+1)
	entries, err := collect(rows, err, func(rows *sql.Rows, ie *audit.IndexEntry) error {
		return rows.Scan(&ie.Index, &ie.IssuerSequence, &ie.Sequence, &ie.HighWater, &ie.Session)
	})
	if err != nil {
		e.dbError(w, err)
		return
	}
	if len(entries) > indexPage {
		entries = entries[:indexPage]
		next := fmt.Sprintf("/issuer/%s/index.json?after=%d", url.PathEscape(kid), entries[len(entries)-1].Index)
		w.Header().Set("Link", "<"+next+`>; rel="next"`)
	}
	release, ok := e.fetchSlot(ctx, w)
	if !ok {
		return
	}
	defer release()
	name := "issuer-index.json"
	if after >= 0 {
		name = fmt.Sprintf("issuer-index-after-%d.json", after)
	}
	lw := &lazyHeader{w: w, name: name, ctype: "application/json"}
	started, err := audit.WriteIndexProof(ctx, lw, e.cfg.Fetcher, kid, v.cp, v.cpInfo.Size, entries)
	if err == nil {
		return
	}
	e.cfg.Logger.Warn("explorer index", "issuer", kid, "err", err)
	if !started {
		httpError(w, http.StatusBadGateway, "proving the index: "+publicError(err))
		return
	}
	// Part of the index is sent: cut the response, so that no client takes
	// it for the whole.
	panic(http.ErrAbortHandler)
}

// collect scans every row of rows, the result of a query that may have
// failed with err, with scan.
func collect[T any](rows *sql.Rows, err error, scan func(*sql.Rows, *T) error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var x T
		if err := scan(rows, &x); err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, rows.Err()
}

// lazyHeader sets a download's headers at its first write.
type lazyHeader struct {
	w           http.ResponseWriter
	name, ctype string
	written     bool
}

func (l *lazyHeader) Write(b []byte) (int, error) {
	if !l.written {
		l.written = true
		l.w.Header().Set("Content-Type", l.ctype)
		l.w.Header().Set("Content-Disposition", `attachment; filename="`+l.name+`"`)
	}
	return l.w.Write(b)
}

// sessionInfo is a session's row.
type sessionInfo struct {
	ID                  int64
	Issuer, SID, Broken string
	N, LastSeq          int64
	Missing             bool
	First, Last         uint64
	Ended               bool
}

func (e *Explorer) sessionOf(ctx context.Context, w http.ResponseWriter, r *http.Request) (*sessionInfo, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		httpError(w, http.StatusBadRequest, "the session number is not a number")
		return nil, false
	}
	s := &sessionInfo{ID: id}
	err = e.idx.db.QueryRowContext(ctx, `SELECT i.kid, s.sid, s.n, s.first, s.last FROM sessions s JOIN issuers i ON i.id = s.issuer WHERE s.id = ?`, id).
		Scan(&s.Issuer, &s.SID, &s.N, &s.First, &s.Last)
	return s, e.found(w, err, "no such session in the verified entries of the log")
}

func (e *Explorer) session(w http.ResponseWriter, r *http.Request) {
	v, st, code := e.pageView(w)
	if v == nil {
		return
	}
	ctx := r.Context()
	s, ok := e.sessionOf(ctx, w, r)
	if !ok {
		return
	}
	if err := e.verdict(ctx, v, s); err != nil {
		e.dbError(w, err)
		return
	}
	page, err := e.chainPage(ctx, w, r, v, s.ID)
	if page == nil {
		if err != nil {
			e.dbError(w, err)
		}
		return
	}
	rs := page.Rows
	for _, row := range rs {
		if row.DecHash != "" {
			if err := e.resolve(ctx, v, row); err != nil {
				e.dbError(w, err)
				return
			}
		}
	}
	render(w, code, "session", map[string]any{"Progress": progressOf(v, st), "S": s, "Rows": rs, "Page": page})
}

// A chainPage is a page of a session's receipts in chain order (sequence,
// then log index), with the cursors of the pages before and after it.
type chainPage struct {
	Rows              []*entryRow
	First, Prev, Next string // query strings, "" when there is none
}

// chainPage returns the page of session's receipts that the query's
// cursor asks for: after=SEQUENCE.ENTRY, the receipts after that place in
// the chain; before=SEQUENCE.ENTRY, those before it; neither, the first.
// Each direction reads sessionRows+1 rows of the index on (session, seq,
// idx), and whether there is anything the other way one more. It answers
// a malformed cursor itself (nil, nil).
func (e *Explorer) chainPage(ctx context.Context, w http.ResponseWriter, r *http.Request, v *view, session int64) (*chainPage, error) {
	q := r.URL.Query()
	back := q.Get("before") != "" && q.Get("after") == ""
	name := "after"
	if back {
		name = "before"
	}
	seq, idx, ok := chainCursor(w, r, name)
	if !ok {
		return nil, nil
	}
	const where = " WHERE e.session = ? AND e.idx < ? AND "
	query := "SELECT " + rowColumns + where + "(e.seq, e.idx) > (?, ?) ORDER BY e.seq, e.idx LIMIT ?"
	if back {
		query = "SELECT " + rowColumns + where + "(e.seq, e.idx) < (?, ?) ORDER BY e.seq DESC, e.idx DESC LIMIT ?"
	}
	rows, err := e.idx.db.QueryContext(ctx, query, session, v.size, seq, idx, sessionRows+1)
	if err != nil {
		return nil, err
	}
	rs, err := scanRows(rows)
	if err != nil {
		return nil, err
	}
	more := len(rs) > sessionRows
	if more {
		rs = rs[:sessionRows]
	}
	if back {
		slices.Reverse(rs)
	}
	p := &chainPage{Rows: rs}
	if len(rs) == 0 {
		return p, nil
	}
	first, last := rs[0], rs[len(rs)-1]
	// Whether anything comes the other way: the cursor's own receipt, or
	// nothing when the cursor is not in the chain.
	other := "SELECT EXISTS (SELECT 1 FROM entries e" + where + "(e.seq, e.idx) < (?, ?))"
	at := first
	if back {
		other = "SELECT EXISTS (SELECT 1 FROM entries e" + where + "(e.seq, e.idx) > (?, ?))"
		at = last
	}
	var beyond bool
	if err := e.idx.db.QueryRowContext(ctx, other, session, v.size, at.Seq, at.Index).Scan(&beyond); err != nil {
		return nil, err
	}
	hasPrev, hasNext := beyond, more
	if back {
		hasPrev, hasNext = more, beyond
	}
	if hasPrev {
		p.First, p.Prev = "?", fmt.Sprintf("?before=%d.%d", first.Seq, first.Index)
	}
	if hasNext {
		p.Next = fmt.Sprintf("?after=%d.%d", last.Seq, last.Index)
	}
	return p, nil
}

// chainCursor reads the name=SEQUENCE.ENTRY of a page in chain order (a
// place in it: after= the last receipt of the page before, before= the
// first of the page after). Without one it returns a place before every
// receipt; a malformed one is answered 400.
func chainCursor(w http.ResponseWriter, r *http.Request, name string) (seq, idx int64, ok bool) {
	c := r.URL.Query().Get(name)
	if c == "" {
		return -1 << 62, -1, true
	}
	a, b, cut := strings.Cut(c, ".")
	seq, err1 := strconv.ParseInt(a, 10, 64)
	idx, err2 := strconv.ParseInt(b, 10, 64)
	if !cut || err1 != nil || err2 != nil {
		httpError(w, http.StatusBadRequest, name+" is SEQUENCE.ENTRY")
		return 0, 0, false
	}
	return seq, idx, true
}

// afterIndex reads the after=N of a page in log order: the last entry of
// the page before, -1 without one; a malformed one is answered 400.
func afterIndex(w http.ResponseWriter, r *http.Request) (int64, bool) {
	s := r.URL.Query().Get("after")
	if s == "" {
		return -1, true
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		httpError(w, http.StatusBadRequest, errBadCursor.Error())
		return 0, false
	}
	return n, true
}

func (e *Explorer) sessionDownload(w http.ResponseWriter, r *http.Request) {
	v := e.downloadView(w)
	if v == nil {
		return
	}
	ctx := r.Context()
	s, ok := e.sessionOf(ctx, w, r)
	if !ok {
		return
	}
	e.jsonl(w, r, v, "e.session = ?", []any{s.ID}, fmt.Sprintf("session-%d", s.ID), true)
}

func (e *Explorer) search(w http.ResponseWriter, r *http.Request) {
	v, st, code := e.pageView(w)
	if v == nil {
		return
	}
	f := filterOf(r.URL.Query())
	cond, args, err := f.where()
	if err != nil {
		httpError(w, http.StatusBadRequest, "search: "+err.Error())
		return
	}
	list, err := e.list(r.Context(), v, r.URL.Query(), cond, args, f.query())
	if err != nil {
		e.dbError(w, err)
		return
	}
	render(w, code, "search", map[string]any{"Progress": progressOf(v, st), "F": f, "List": list,
		"Download": "/search.jsonl?" + f.query().Encode(), "Decisions": []string{"allow", "deny", "ask", "not_enforced"},
		"Kinds": []string{kindDecision, kindExecution, kindLifecycle, kindUnmediated, kindBad}})
}

func (e *Explorer) searchDownload(w http.ResponseWriter, r *http.Request) {
	v := e.downloadView(w)
	if v == nil {
		return
	}
	f := filterOf(r.URL.Query())
	cond, args, err := f.where()
	if err != nil {
		httpError(w, http.StatusBadRequest, "search: "+err.Error())
		return
	}
	e.jsonl(w, r, v, cond, args, "entries", false)
}

// jsonl streams a page of jsonlPage matching entries as JSONL: in chain
// order, the receipts (inChain, for a session), else in log order, the log
// entries (each with its public key). Each leaf is read from the log and
// checked against the one verified. The next page is in the Link header:
// after=N in log order, after=SEQUENCE.ENTRY in chain order; either way a
// page reads only its own rows of the index.
func (e *Explorer) jsonl(w http.ResponseWriter, r *http.Request, v *view, cond string, args []any, name string, inChain bool) {
	ctx := r.Context()
	q := "SELECT e.idx, e.seq, e.leaf FROM entries e WHERE (" + cond + ") AND "
	qargs := append([]any{}, args...)
	if inChain {
		seq, idx, ok := chainCursor(w, r, "after")
		if !ok {
			return
		}
		q += "(e.seq, e.idx) > (?, ?) AND e.idx < ? ORDER BY e.seq, e.idx LIMIT ?"
		qargs = append(qargs, seq, idx)
	} else {
		after, ok := afterIndex(w, r)
		if !ok {
			return
		}
		q += "e.idx > ? AND e.idx < ? ORDER BY e.idx LIMIT ?"
		qargs = append(qargs, after)
	}
	qargs = append(qargs, v.size, jsonlPage+1)
	type item struct {
		idx  uint64
		seq  sql.NullInt64
		leaf []byte
	}
	rows, err := e.idx.db.QueryContext(ctx, q, qargs...)
	items, err := collect(rows, err, func(rows *sql.Rows, it *item) error { return rows.Scan(&it.idx, &it.seq, &it.leaf) })
	if err != nil {
		e.dbError(w, err)
		return
	}
	if len(items) > jsonlPage {
		items = items[:jsonlPage]
		last := items[len(items)-1]
		nq := cloneValues(r.URL.Query())
		if inChain {
			nq.Set("after", fmt.Sprintf("%d.%d", last.seq.Int64, last.idx))
		} else {
			nq.Set("after", fmt.Sprint(last.idx))
		}
		w.Header().Set("Link", "<"+r.URL.Path+"?"+nq.Encode()+`>; rel="next"`)
	}
	release, ok := e.fetchSlot(ctx, w)
	if !ok {
		return
	}
	defer release()
	lr := &leafReader{f: e.cfg.Fetcher, size: v.cpInfo.Size}
	lw := &lazyHeader{w: w, name: name + ".jsonl", ctype: "application/jsonl"}
	for _, it := range items {
		leaf, err := lr.read(ctx, it.idx)
		if err == nil && !bytes.Equal(rfc6962.DefaultHasher.HashLeaf(leaf), it.leaf) {
			err = &refreshError{fmt.Sprintf("the log now serves another entry %d than the one verified", it.idx), errors.New("leaf changed")}
		}
		var line []byte
		if err == nil {
			line = leaf
			if inChain {
				var entry struct {
					Receipt json.RawMessage `json:"receipt"`
				}
				if err = json.Unmarshal(leaf, &entry); err == nil {
					line = entry.Receipt
				}
			}
		}
		if err != nil {
			e.cfg.Logger.Warn("explorer download", "n", it.idx, "err", err)
			if !lw.written {
				httpError(w, http.StatusBadGateway, fmt.Sprintf("entry %d: %s", it.idx, publicError(err)))
				return
			}
			panic(http.ErrAbortHandler)
		}
		if _, err := lw.Write(append(bytes.Clone(line), '\n')); err != nil {
			return
		}
	}
	if !lw.written {
		lw.Write(nil)
	}
}

//go:embed page.html
var pageHTML string

//go:embed style.css
var styleCSS string

// pages is parsed at the first page, not at start-up: the hook links this
// package (through docketcmd) and must not pay for it.
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		// count writes "1 entry", "2 entries" for any integer field.
		"count": func(n any, noun string) string {
			v := reflect.ValueOf(n)
			if v.CanUint() {
				return plural.Count(v.Uint(), noun)
			}
			return plural.Count(v.Int(), noun)
		},
		"short": func(s string) string {
			if len(s) > 24 {
				return s[:24] + "…"
			}
			return s
		},
	}).Parse(pageHTML))
})

func render(w http.ResponseWriter, code int, name string, data map[string]any) {
	var b bytes.Buffer
	if err := pages().ExecuteTemplate(&b, name, data); err != nil {
		httpError(w, http.StatusInternalServerError, "rendering the page failed")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(b.Bytes())
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	pages().ExecuteTemplate(w, "error", map[string]any{"Code": code, "Status": http.StatusText(code), "Message": msg})
}
