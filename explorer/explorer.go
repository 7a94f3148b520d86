// Package explorer serves a read-only web page over a Docket log: its
// latest checkpoint (log signature and witness quorum checked), the newest
// entries, each entry with its receipt and a recomputed inclusion proof, and
// each issuer's verifiable index (package audit's IssuerIndexProof), which
// `docket verify-index` checks offline with the log key alone.
//
// The explorer reads the log through the tlog-tiles API like any client:
// every entry it shows was verified and the tree root recomputed from the
// entries before the page is served. It never writes to the log.
package explorer

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/tessera/client"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/c2sp"
)

// Config configures an Explorer.
type Config struct {
	// Fetcher reads the log; Verifier checks its checkpoints (log key and,
	// with a policy, the witness quorum).
	Fetcher  audit.Fetcher
	Verifier *c2sp.ProofVerifier
	// Refresh is how often the explorer looks for a new checkpoint, at most
	// (default one second).
	Refresh time.Duration
	Logger  *slog.Logger
}

// An Explorer is the http.Handler of the explorer page. It is safe for
// concurrent use.
type Explorer struct {
	cfg Config
	mux *http.ServeMux

	// mu guards the fields below, the explorer's view of the log.
	mu      sync.Mutex
	checked time.Time
	cp      []byte
	cpInfo  *c2sp.Checkpoint
	rng     *compact.Range
	index   *audit.IssuerIndex
	recent  []*audit.Record // the newest entries, oldest first
	bad     []*audit.BadEntry
	lastErr error
}

const recentMax = 200

// New returns an explorer of the log cfg describes.
func New(cfg Config) (*Explorer, error) {
	if cfg.Fetcher == nil || cfg.Verifier == nil {
		return nil, fmt.Errorf("explorer: Fetcher and Verifier are required")
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Explorer{cfg: cfg, mux: http.NewServeMux(), rng: audit.NewRange(), index: audit.NewIssuerIndex()}
	e.mux.HandleFunc("GET /{$}", e.home)
	e.mux.HandleFunc("GET /entry/{n}", e.entry)
	e.mux.HandleFunc("GET /issuer/{kid}", e.issuer)
	e.mux.HandleFunc("GET /issuer/{kid}/index.json", e.issuerIndex)
	e.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	return e, nil
}

func (e *Explorer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	e.mux.ServeHTTP(w, r)
}

// refresh reads the log's checkpoint, at most every Refresh, and takes in
// the entries it adds. It returns the view to render under e.mu.
func (e *Explorer) refresh(ctx context.Context) error {
	if time.Since(e.checked) < e.cfg.Refresh && e.cp != nil {
		return e.lastErr
	}
	e.checked = time.Now()
	e.lastErr = e.update(ctx)
	if e.lastErr != nil {
		e.cfg.Logger.Warn("explorer refresh", "err", e.lastErr)
	}
	return e.lastErr
}

func (e *Explorer) update(ctx context.Context) error {
	raw, err := e.cfg.Fetcher.ReadCheckpoint(ctx)
	if err != nil {
		return fmt.Errorf("reading the checkpoint: %w", err)
	}
	cp, err := e.cfg.Verifier.VerifyCheckpoint(raw)
	if err != nil {
		return err
	}
	if e.cpInfo != nil && cp.Size < e.cpInfo.Size {
		return fmt.Errorf("the log's checkpoint went back from size %d to %d", e.cpInfo.Size, cp.Size)
	}
	if e.cpInfo != nil && cp.Size == e.cpInfo.Size {
		if !bytes.Equal(cp.Root, e.cpInfo.Root) {
			return fmt.Errorf("the log signed two roots for size %d", cp.Size)
		}
		e.cp = raw // new cosignatures
		return nil
	}
	rng, err := audit.RestoreRange(e.rng.End(), e.rng.Hashes())
	if err != nil {
		return err
	}
	index, recent, bad := e.index, e.recent, e.bad
	err = audit.Scan(ctx, e.cfg.Fetcher, cp.Size, cp.Root, rng, func(r *audit.Record, b *audit.BadEntry) error {
		if b != nil {
			bad = append(bad, b)
		} else {
			recent = append(recent, r)
			if len(recent) > 2*recentMax {
				recent = append(recent[:0], recent[len(recent)-recentMax:]...)
			}
		}
		return index.Add(r, b)
	})
	if err != nil {
		// The index may hold entries of the failed range: start over next time.
		e.rng, e.index, e.recent, e.bad, e.cp, e.cpInfo = audit.NewRange(), audit.NewIssuerIndex(), nil, nil, nil, nil
		return err
	}
	e.rng, e.recent, e.bad, e.cp, e.cpInfo = rng, recent, bad, raw, cp
	return nil
}

func (e *Explorer) home(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	data := map[string]any{"Err": e.refresh(r.Context())}
	if e.cpInfo != nil {
		rows := make([]*audit.Record, 0, 50)
		for i := len(e.recent) - 1; i >= 0 && len(rows) < 50; i-- {
			rows = append(rows, e.recent[i])
		}
		type issuerRow struct {
			KID   string
			Count int
		}
		var issuers []issuerRow
		for _, kid := range e.index.Issuers() {
			issuers = append(issuers, issuerRow{kid, len(e.index.Entries(kid))})
		}
		data["Checkpoint"] = e.cpInfo
		data["Witnessed"] = e.cfg.Verifier.Witnessed()
		data["Root"] = hex.EncodeToString(e.cpInfo.Root)
		data["Note"] = string(e.cp)
		data["Rows"] = rows
		data["Issuers"] = issuers
		data["Bad"] = e.bad
	}
	render(w, "home", data)
}

func (e *Explorer) entry(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.ParseUint(r.PathValue("n"), 10, 64)
	if err != nil {
		httpError(w, http.StatusBadRequest, "the entry number is not a number")
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.refresh(r.Context()); err != nil && e.cpInfo == nil {
		httpError(w, http.StatusBadGateway, err.Error())
		return
	}
	if n >= e.cpInfo.Size {
		httpError(w, http.StatusNotFound, fmt.Sprintf("the log has %d entries", e.cpInfo.Size))
		return
	}
	ctx := r.Context()
	b, err := client.GetEntryBundle(ctx, e.cfg.Fetcher.ReadEntryBundle, n/256, e.cpInfo.Size)
	if err != nil || int(n%256) >= len(b.Entries) {
		httpError(w, http.StatusBadGateway, fmt.Sprintf("reading entry %d: %v", n, err))
		return
	}
	leaf := b.Entries[n%256]
	pb, err := client.NewProofBuilder(ctx, e.cpInfo.Size, e.cfg.Fetcher.ReadTile)
	var hashes [][]byte
	if err == nil {
		hashes, err = pb.InclusionProof(ctx, n)
	}
	included := err == nil && proof.VerifyInclusion(rfc6962.DefaultHasher, n, e.cpInfo.Size, rfc6962.DefaultHasher.HashLeaf(leaf), hashes, e.cpInfo.Root) == nil
	var pretty bytes.Buffer
	var entry struct {
		PublicKey string          `json:"public_key"`
		Receipt   json.RawMessage `json:"receipt"`
	}
	valid := json.Unmarshal(leaf, &entry) == nil
	if valid {
		json.Indent(&pretty, entry.Receipt, "", "  ")
	}
	rec, recErr := audit.ParseRecord(n, leaf)
	proofText := make([]string, len(hashes))
	for i, h := range hashes {
		proofText[i] = hex.EncodeToString(h)
	}
	render(w, "entry", map[string]any{
		"N": n, "Size": e.cpInfo.Size, "Included": included, "Proof": proofText, "Receipt": pretty.String(),
		"PublicKey": entry.PublicKey, "Record": rec, "RecordErr": recErr, "LeafHash": hex.EncodeToString(rfc6962.DefaultHasher.HashLeaf(leaf)),
	})
}

func (e *Explorer) issuer(w http.ResponseWriter, r *http.Request) {
	kid := r.PathValue("kid")
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.refresh(r.Context()); err != nil && e.cpInfo == nil {
		httpError(w, http.StatusBadGateway, err.Error())
		return
	}
	entries := e.index.Entries(kid)
	if len(entries) == 0 {
		httpError(w, http.StatusNotFound, "no entry of this issuer in the log")
		return
	}
	// The summary is what an offline verifier of the index would conclude.
	p, err := e.index.Prove(r.Context(), e.cfg.Fetcher, kid, e.cp)
	if err != nil {
		httpError(w, http.StatusBadGateway, err.Error())
		return
	}
	b, _ := json.Marshal(p)
	sum, err := audit.VerifyIssuerIndex(b, e.cfg.Verifier.LogKey())
	render(w, "issuer", map[string]any{"KID": kid, "Entries": entries, "Summary": sum, "Err": err, "Size": e.cpInfo.Size})
}

func (e *Explorer) issuerIndex(w http.ResponseWriter, r *http.Request) {
	kid := r.PathValue("kid")
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.refresh(r.Context()); err != nil && e.cpInfo == nil {
		httpError(w, http.StatusBadGateway, err.Error())
		return
	}
	p, err := e.index.Prove(r.Context(), e.cfg.Fetcher, kid, e.cp)
	if err != nil {
		httpError(w, http.StatusBadGateway, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Disposition", `attachment; filename="issuer-index.json"`)
	json.NewEncoder(w).Encode(p)
}

//go:embed page.html
var pageHTML string

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"short": func(s string) string {
		if len(s) > 19 {
			return s[:19] + "…"
		}
		return s
	},
}).Parse(pageHTML))

func render(w http.ResponseWriter, name string, data map[string]any) {
	var b bytes.Buffer
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		httpError(w, http.StatusInternalServerError, "rendering the page failed")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	pages.ExecuteTemplate(w, "error", map[string]any{"Code": code, "Status": http.StatusText(code), "Message": msg})
}
