package explorer

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/docketlog/docket/audit"
)

// maxEvidence bounds an evidence file given to the evidence page: a
// finding's evidence holds at most a few entries of at most 64 KiB.
const maxEvidence = 16 << 20

// An evidenceRow is an entry named by evidence, as the evidence page
// lists it.
type evidenceRow struct {
	Index uint64
	// InIndex is whether the explorer verified that entry; Same whether
	// the leaf the evidence holds is the one it verified there.
	InIndex, Same bool
}

// evidence shows the form that takes a `docket audit` or `docket monitor`
// evidence file (GET), or checks one and links its entries to their pages
// (POST): the page says what the evidence proves with the log key alone,
// and whether each entry it names is the one the explorer verified.
func (e *Explorer) evidence(w http.ResponseWriter, r *http.Request) {
	v, st, code := e.pageView(w)
	if v == nil {
		return
	}
	data := map[string]any{"Progress": progressOf(v, st)}
	if r.Method != http.MethodPost {
		render(w, code, "evidence", data)
		return
	}
	b, err := readEvidence(w, r)
	if err != nil {
		httpError(w, http.StatusBadRequest, "evidence: "+err.Error())
		return
	}
	ev, err := audit.ParseEvidence(b)
	if err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	proves, verr := audit.VerifyEvidence(ev, e.cfg.Verifier.LogKey())
	data["Kind"], data["Message"], data["Proves"] = ev.Kind, ev.Message, proves
	if verr != nil {
		data["VerifyErr"] = verr.Error()
		code = http.StatusUnprocessableEntity
	}
	var rows []evidenceRow
	for _, en := range ev.Entries {
		row := evidenceRow{Index: en.Index}
		leaf, err := en.Bytes()
		if err == nil && en.Index < v.size {
			var want []byte
			err = e.idx.db.QueryRowContext(r.Context(), `SELECT leaf FROM entries WHERE idx = ?`, en.Index).Scan(&want)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				e.dbError(w, err)
				return
			default:
				row.InIndex, row.Same = true, bytes.Equal(rfc6962.DefaultHasher.HashLeaf(leaf), want)
			}
		}
		rows = append(rows, row)
	}
	data["Entries"] = rows
	render(w, code, "evidence", data)
}

// readEvidence reads the evidence file of a form: the uploaded file, or
// the pasted text.
func readEvidence(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxEvidence+1<<20)
	if err := r.ParseMultipartForm(1 << 20); err != nil && !errors.Is(err, http.ErrNotMultipart) {
		return nil, fmt.Errorf("reading the form: %w", err)
	}
	if f, _, err := r.FormFile("file"); err == nil {
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxEvidence+1))
		if err == nil && len(b) > maxEvidence {
			err = fmt.Errorf("larger than %d bytes", maxEvidence)
		}
		if err == nil && len(bytes.TrimSpace(b)) > 0 {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
	if text := r.FormValue("text"); text != "" {
		return []byte(text), nil
	}
	return nil, errors.New("no evidence file given")
}
