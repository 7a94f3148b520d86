package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/docketlog/docket/internal/durable"
)

// SyncLogFile is the sync log: the outcome of the last `docket sync` runs,
// background ones included (the hooks start them detached, with no
// terminal to report to), one JSON object a line, newest last. docket
// status and docket doctor read it.
const SyncLogFile = "sync.log"

// maxSyncRecords bounds the sync log: older records are dropped.
const maxSyncRecords = 50

// maxSyncLog bounds what SyncLog reads of the file.
const maxSyncLog = 256 << 10

// A SyncRecord is the outcome of one `docket sync` run.
type SyncRecord struct {
	// Time is when the run ended.
	Time time.Time `json:"time"`
	// Background is set for a run a hook started (no one saw its output).
	Background bool `json:"background,omitempty"`
	// Stored is how many proofs the run stored; Pending how many receipts
	// it left without one; Rejected how many the log refused for good.
	Stored   int `json:"stored"`
	Pending  int `json:"pending"`
	Rejected int `json:"rejected,omitempty"`
	// Error is why the run did not finish, "" when it did; Fix what to do.
	Error string `json:"error,omitempty"`
	Fix   string `json:"fix,omitempty"`
}

// OK reports whether the run left nothing pending and hit no error.
func (r SyncRecord) OK() bool { return r.Error == "" && r.Pending == 0 && r.Rejected == 0 }

// RecordSync appends r to the sync log, keeping its last maxSyncRecords
// records. Writers take turns on a lock on the file; a record torn by a
// crash is skipped by SyncLog.
func (s *Store) RecordSync(r SyncRecord) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, SyncLogFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("sync log: %w", err)
	}
	defer f.Close()
	if err := durable.Lock(f); err != nil {
		return fmt.Errorf("sync log: %w", err)
	}
	old, err := io.ReadAll(io.LimitReader(f, maxSyncLog))
	if err != nil {
		return fmt.Errorf("sync log: %w", err)
	}
	lines := append(bytes.SplitAfter(old, []byte("\n")), append(line, '\n'))
	var keep [][]byte
	for _, l := range lines {
		if len(l) > 0 && l[len(l)-1] == '\n' {
			keep = append(keep, l)
		}
	}
	if len(keep) > maxSyncRecords {
		keep = keep[len(keep)-maxSyncRecords:]
	}
	data := bytes.Join(keep, nil)
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("sync log: %w", err)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("sync log: %w", err)
	}
	return f.Sync()
}

// SyncLog returns the records of the sync log, oldest first; none when no
// sync ran. Lines that do not parse (a write torn by a crash) are skipped.
func (s *Store) SyncLog() ([]SyncRecord, error) {
	data, err := readFileMax(filepath.Join(s.dir, SyncLogFile), maxSyncLog)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sync log: %w", err)
	}
	var recs []SyncRecord
	for _, l := range bytes.Split(data, []byte("\n")) {
		var r SyncRecord
		if len(l) == 0 || json.Unmarshal(l, &r) != nil {
			continue
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// LastSync returns the newest record of the sync log, and false when no
// sync ran.
func (s *Store) LastSync() (SyncRecord, bool, error) {
	recs, err := s.SyncLog()
	if err != nil || len(recs) == 0 {
		return SyncRecord{}, false, err
	}
	return recs[len(recs)-1], true, nil
}
