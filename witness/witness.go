package witness

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
)

// Defaults for the zero values of Config's limits.
const (
	// DefaultMaxBodySize bounds an add-checkpoint body: 63 proof lines and a
	// checkpoint with many signatures fit with a wide margin.
	DefaultMaxBodySize = 256 << 10
	// DefaultRateLimit is the sustained add-checkpoint requests per second
	// accepted per log.
	DefaultRateLimit = 50
	// DefaultRateBurst is the burst of add-checkpoint requests accepted per log.
	DefaultRateBurst = 100
)

// Config configures a Witness. Signer and DBPath are required. Logs may be
// empty (every add-checkpoint then gets 404) and replaced later with SetLogs.
// The limits default when zero.
type Config struct {
	// Signer produces the witness's cosignatures. It must be a C2SP
	// cosignature/v1 signer, such as one from NewCosigner.
	Signer note.Signer

	// DBPath is the SQLite database file holding the witness state. It is
	// created if it does not exist.
	DBPath string

	// Logs are the logs the witness cosigns for, usually from ParseLogs.
	// Replace them later with SetLogs.
	Logs []Log

	// Logger receives one line per request, and errors. Nil discards.
	Logger *slog.Logger

	// MaxBodySize is the largest add-checkpoint body accepted, in bytes.
	// Zero means DefaultMaxBodySize.
	MaxBodySize int64

	// RateLimit is the sustained rate of add-checkpoint requests per second
	// accepted per log, counted once the log's signature verified. Zero means
	// DefaultRateLimit; a negative value disables the limit.
	RateLimit float64

	// RateBurst is the number of add-checkpoint requests per log accepted in
	// a burst. Zero means DefaultRateBurst.
	RateBurst int
}

// Witness is a tlog-witness server. Its methods are safe for concurrent use.
type Witness struct {
	signer  note.Signer
	db      *sql.DB
	logger  *slog.Logger
	maxBody int64
	limiter *limiter // nil when unlimited
	mux     *http.ServeMux

	logs atomic.Pointer[logSet]

	// commitMu serializes the check-and-persist transactions, so that they
	// do not contend for SQLite's write lock.
	commitMu sync.Mutex
}

// New opens (or creates) the witness database and returns a Witness serving
// the configured logs. Close it to release the database.
func New(cfg Config) (*Witness, error) {
	if cfg.Signer == nil {
		return nil, errors.New("witness: no signer")
	}
	if cfg.MaxBodySize < 0 || cfg.RateBurst < 0 || math.IsNaN(cfg.RateLimit) {
		return nil, errors.New("witness: negative or invalid limit")
	}
	logs, err := newLogSet(cfg.Logs)
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	w := &Witness{
		signer:  cfg.Signer,
		logger:  cfg.Logger,
		maxBody: cfg.MaxBodySize,
	}
	if w.logger == nil {
		w.logger = slog.New(slog.DiscardHandler)
	}
	if w.maxBody == 0 {
		w.maxBody = DefaultMaxBodySize
	}
	if cfg.RateLimit >= 0 {
		rate, burst := cfg.RateLimit, cfg.RateBurst
		if rate == 0 {
			rate = DefaultRateLimit
		}
		if burst == 0 {
			burst = DefaultRateBurst
		}
		w.limiter = newLimiter(rate, burst)
	}
	w.logs.Store(logs)
	w.db, err = openDB(cfg.DBPath)
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	w.mux = http.NewServeMux()
	w.mux.HandleFunc("POST /add-checkpoint", w.serveAddCheckpoint)
	w.mux.HandleFunc("GET /{id}/checkpoint", w.serveCheckpoint)
	w.mux.HandleFunc("GET /evidence", w.serveEvidence)
	w.mux.HandleFunc("GET /health", w.serveHealth)
	return w, nil
}

// SetLogs replaces the logs the witness cosigns for. Requests in flight finish
// with the list they started with. The state of removed logs is kept, and
// used again if they are added back.
func (w *Witness) SetLogs(logs []Log) error {
	s, err := newLogSet(logs)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	w.logs.Store(s)
	return nil
}

// Close closes the database. Call it after the HTTP server has shut down.
// Closing twice is harmless.
func (w *Witness) Close() error {
	return w.db.Close()
}

// Errors of add-checkpoint, mapped to status codes by statusOf.
var (
	errUnknownLog   = errors.New("unknown log origin")
	errBadSignature = errors.New("no valid signature from a known key of the log")
	errRateLimited  = errors.New("rate limit exceeded for this log")
	// errProofNotEmpty is a proof between two equal trees (422, no evidence).
	errProofNotEmpty = errors.New("consistency proof between equal trees is not empty")
	// errProofFromZero is a non-empty proof from old size 0 (422, no evidence).
	errProofFromZero = errors.New("consistency proof from old size 0 is not empty")
	// errEmptyRoot is a size-0 checkpoint whose root is not the empty tree's
	// (422, nothing stored).
	errEmptyRoot = errors.New("checkpoint of size 0 does not have the empty tree's root hash")
)

// conflictError reports that the old size of a request is not the size of the
// latest checkpoint cosigned for the log (409 Conflict).
type conflictError struct {
	// Size is the size of the latest cosigned checkpoint (0 if none).
	Size uint64
}

func (e *conflictError) Error() string {
	return fmt.Sprintf("old size does not match the latest cosigned size %d", e.Size)
}

// inconsistencyError reports a checkpoint that does not extend the latest
// cosigned one (422 Unprocessable Entity). The request was stored as evidence.
type inconsistencyError struct {
	Evidence Evidence
}

func (e *inconsistencyError) Error() string {
	if e.Evidence.Kind == EvidenceFork {
		return fmt.Sprintf("fork: checkpoint of size %d has another root than the cosigned one (evidence %d)",
			e.Evidence.OldSize, e.Evidence.ID)
	}
	return fmt.Sprintf("consistency proof from size %d does not verify (evidence %d)",
		e.Evidence.OldSize, e.Evidence.ID)
}

// addCheckpoint runs the tlog-witness checks on body and, if they pass,
// records the checkpoint and returns the cosignature line(s).
func (w *Witness) addCheckpoint(ctx context.Context, body []byte) (c checkpoint, cosig []byte, err error) {
	req, err := parseAddRequest(body)
	if err != nil {
		return checkpoint{}, nil, err
	}
	origin := originOf(req.Checkpoint)
	c.Origin = origin
	verifiers, ok := w.logs.Load().byOrigin[origin]
	if !ok {
		return c, nil, errUnknownLog
	}
	n, err := note.Open(req.Checkpoint, verifiers)
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		if errors.As(err, &unverified) || errors.As(err, &invalid) {
			return c, nil, errBadSignature
		}
		return c, nil, malformed("checkpoint note: %v", err)
	}
	c, err = parseCheckpoint([]byte(n.Text))
	if err != nil {
		return c, nil, err
	}
	if req.OldSize > c.Size {
		return c, nil, malformed("old size %d is larger than the checkpoint size %d", req.OldSize, c.Size)
	}
	if c.Size == 0 && !bytes.Equal(c.Root, c2sp.EmptyRoot) {
		return c, nil, errEmptyRoot
	}
	if w.limiter != nil && !w.limiter.allow(origin, time.Now()) {
		return c, nil, errRateLimited
	}

	w.commitMu.Lock()
	defer w.commitMu.Unlock()
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return c, nil, fmt.Errorf("starting transaction: %w", err)
	}
	defer tx.Rollback()
	latest, err := getLatest(ctx, tx, origin)
	if err != nil {
		return c, nil, err
	}
	if req.OldSize != latest.size {
		return c, nil, &conflictError{Size: latest.size}
	}
	if req.OldSize == 0 && len(req.Proof) > 0 {
		return c, nil, errProofFromZero
	}
	if latest.note != nil {
		if c.Size == latest.size && bytes.Equal(c.Root, latest.root) && len(req.Proof) > 0 {
			// Nothing contradicts the cosigned checkpoint: no evidence.
			return c, nil, errProofNotEmpty
		}
		kind := ""
		if c.Size == latest.size && !bytes.Equal(c.Root, latest.root) {
			kind = EvidenceFork
		} else if err := proof.VerifyConsistency(rfc6962.DefaultHasher, latest.size, c.Size, req.Proof, latest.root, c.Root); err != nil {
			kind = EvidenceInconsistent
		}
		if kind != "" {
			e := &inconsistencyError{Evidence{
				Origin:    origin,
				Kind:      kind,
				Time:      time.Now().UTC().Truncate(time.Second),
				OldSize:   req.OldSize,
				Proof:     encodeProof(req.Proof),
				Latest:    string(latest.note),
				Submitted: string(req.Checkpoint),
			}}
			if err := putEvidence(ctx, tx, &e.Evidence); err != nil {
				return c, nil, err
			}
			if err := tx.Commit(); err != nil {
				return c, nil, fmt.Errorf("recording evidence: %w", err)
			}
			return c, nil, e
		}
	}
	// Keep the log's verified signatures, drop any others, and add ours last.
	signed, err := note.Sign(&note.Note{Text: n.Text, Sigs: n.Sigs}, w.signer)
	if err != nil {
		return c, nil, fmt.Errorf("cosigning: %w", err)
	}
	if err := putLatest(ctx, tx, c, signed, time.Now()); err != nil {
		return c, nil, err
	}
	if err := tx.Commit(); err != nil {
		return c, nil, fmt.Errorf("recording checkpoint: %w", err)
	}
	// Our signature line is the last line of the signed note.
	i := bytes.LastIndexByte(signed[:len(signed)-1], '\n')
	return c, signed[i+1:], nil
}
