package witness

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docketlog/docket/c2sp"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

const schema = `
CREATE TABLE IF NOT EXISTS checkpoint (
	origin     TEXT PRIMARY KEY,
	id         TEXT NOT NULL UNIQUE, -- lowercase hex SHA-256 of origin
	size       INTEGER NOT NULL,
	root       BLOB NOT NULL,
	note       BLOB NOT NULL,        -- the checkpoint with the log's signatures and the cosignature
	updated_at INTEGER NOT NULL      -- Unix seconds
) STRICT;
CREATE TABLE IF NOT EXISTS evidence (
	id          INTEGER PRIMARY KEY,
	origin      TEXT NOT NULL,
	kind        TEXT NOT NULL,       -- 'fork' or 'inconsistent'
	received_at INTEGER NOT NULL,    -- Unix seconds
	old_size    INTEGER NOT NULL,
	proof       TEXT NOT NULL,       -- base64 hashes, one per line
	latest      BLOB NOT NULL,       -- the cosigned checkpoint it contradicts
	submitted   BLOB NOT NULL,       -- the checkpoint as the log signed it
	UNIQUE (origin, submitted)        -- one record per checkpoint the log signed
) STRICT;
`

// openDB opens (creating if needed) the SQLite database at path, in WAL mode
// with synchronous=FULL so that a committed transaction survives a crash, and
// with write transactions that take the write lock when they begin.
func openDB(path string) (*sql.DB, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("database path %q: must be non-empty and contain no '?' or '#'", path)
	}
	dsn := "file:" + path + "?_txlock=immediate" +
		"&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening database: %w", err)
	}
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("creating database schema: %w", err)
	}
	return db, nil
}

// stored is the recorded state of one log.
type stored struct {
	size uint64
	root []byte
	note []byte // nil if the witness never cosigned for the log
}

func getLatest(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, origin string) (stored, error) {
	var s stored
	var size int64
	err := q.QueryRowContext(ctx, "SELECT size, root, note FROM checkpoint WHERE origin = ?", origin).
		Scan(&size, &s.root, &s.note)
	if errors.Is(err, sql.ErrNoRows) {
		return stored{}, nil
	}
	if err != nil {
		return stored{}, fmt.Errorf("reading latest checkpoint: %w", err)
	}
	s.size = uint64(size)
	return s, nil
}

func putLatest(ctx context.Context, tx *sql.Tx, c checkpoint, signedNote []byte, now time.Time) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO checkpoint (origin, id, size, root, note, updated_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (origin) DO UPDATE SET size = excluded.size, root = excluded.root,
			note = excluded.note, updated_at = excluded.updated_at`,
		c.Origin, c2sp.LogID(c.Origin), int64(c.Size), c.Root, signedNote, now.Unix())
	if err != nil {
		return fmt.Errorf("recording checkpoint: %w", err)
	}
	return nil
}

// Evidence is a checkpoint a log signed that the witness refused because it
// contradicts the checkpoint the witness had cosigned: with the failing
// consistency proof, a self-contained record of possible log misbehaviour.
//
// A fork (two roots for one size, both signed by the log) is proof by itself.
// An inconsistent proof is proof only together with the log's own consistency
// proof between the two checkpoints (anyone holding a signed checkpoint can
// attach a wrong proof to it), which a monitor can fetch from the log.
type Evidence struct {
	ID     int64     `json:"id"`
	Origin string    `json:"origin"`
	Kind   string    `json:"kind"` // EvidenceFork or EvidenceInconsistent
	Time   time.Time `json:"time"`
	// OldSize is the old size of the request, the size of Latest.
	OldSize uint64 `json:"old_size"`
	// Proof is the consistency proof of the request, base64 hashes.
	Proof []string `json:"proof"`
	// Latest is the checkpoint the witness had cosigned, with its signatures.
	Latest string `json:"latest"`
	// Submitted is the refused checkpoint, as the log submitted it.
	Submitted string `json:"submitted"`
}

// Kinds of Evidence.
const (
	// EvidenceFork: the submitted checkpoint has the size of the latest
	// cosigned one and another root hash.
	EvidenceFork = "fork"
	// EvidenceInconsistent: the consistency proof from the latest cosigned
	// checkpoint to the submitted one does not verify.
	EvidenceInconsistent = "inconsistent"
)

// String formats e as a report: both checkpoints and the proof.
func (e *Evidence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "log %s: %s checkpoint (evidence %d, %s)\n", e.Origin, e.Kind, e.ID, e.Time.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "\nlatest cosigned checkpoint:\n%s\nsubmitted checkpoint:\n%s\n", e.Latest, e.Submitted)
	fmt.Fprintf(&b, "consistency proof from size %d (%d hashes):\n", e.OldSize, len(e.Proof))
	for _, h := range e.Proof {
		fmt.Fprintf(&b, "%s\n", h)
	}
	return b.String()
}

// putEvidence records e, once per checkpoint the log signed: whoever holds a
// signed checkpoint can submit it with any number of wrong proofs, but only
// the log can make new signed checkpoints, so this bounds the table by the
// log's own output. e.ID is set to the record's ID.
func putEvidence(ctx context.Context, tx *sql.Tx, e *Evidence) error {
	res, err := tx.ExecContext(ctx, `
		INSERT INTO evidence (origin, kind, received_at, old_size, proof, latest, submitted)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		e.Origin, e.Kind, e.Time.Unix(), int64(e.OldSize), strings.Join(e.Proof, "\n"),
		[]byte(e.Latest), []byte(e.Submitted))
	if err != nil {
		return fmt.Errorf("recording evidence: %w", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 1 {
		e.ID, _ = res.LastInsertId()
		return nil
	}
	// Already recorded: report the existing row.
	err = tx.QueryRowContext(ctx, `SELECT id FROM evidence WHERE origin = ? AND submitted = ?`,
		e.Origin, []byte(e.Submitted)).Scan(&e.ID)
	if err != nil {
		return fmt.Errorf("reading evidence: %w", err)
	}
	return nil
}

// maxEvidencePage is the most records ListEvidence returns at once.
const maxEvidencePage = 100

// ListEvidence returns up to 100 evidence records with an ID greater than
// after, oldest first.
func (w *Witness) ListEvidence(ctx context.Context, after int64) ([]Evidence, error) {
	rows, err := w.db.QueryContext(ctx, `
		SELECT id, origin, kind, received_at, old_size, proof, latest, submitted
		FROM evidence WHERE id > ? ORDER BY id LIMIT ?`, after, maxEvidencePage)
	if err != nil {
		return nil, fmt.Errorf("listing evidence: %w", err)
	}
	defer rows.Close()
	var list []Evidence
	for rows.Next() {
		var e Evidence
		var t, old int64
		var proof string
		var latest, submitted []byte
		if err := rows.Scan(&e.ID, &e.Origin, &e.Kind, &t, &old, &proof, &latest, &submitted); err != nil {
			return nil, fmt.Errorf("listing evidence: %w", err)
		}
		e.Time, e.OldSize = time.Unix(t, 0).UTC(), uint64(old)
		e.Proof = []string{}
		if proof != "" {
			e.Proof = strings.Split(proof, "\n")
		}
		e.Latest, e.Submitted = string(latest), string(submitted)
		list = append(list, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing evidence: %w", err)
	}
	return list, nil
}

func encodeProof(p [][]byte) []string {
	s := make([]string, len(p))
	for i, h := range p {
		s[i] = base64.StdEncoding.EncodeToString(h)
	}
	return s
}
