package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSyncLogBounded(t *testing.T) {
	s := Open(t.TempDir())
	if _, ran, err := s.LastSync(); ran || err != nil {
		t.Fatalf("LastSync() on a new store = %v, %v, want false, nil", ran, err)
	}
	for i := range maxSyncRecords + 10 {
		if err := s.RecordSync(SyncRecord{Time: time.Unix(int64(i), 0).UTC(), Stored: i}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := s.SyncLog()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != maxSyncRecords {
		t.Fatalf("SyncLog() has %d records, want %d", len(recs), maxSyncRecords)
	}
	if got, want := recs[0].Stored, 10; got != want {
		t.Errorf("oldest record kept = %d, want %d", got, want)
	}

	// A record torn by a crash is skipped, and the next one is kept.
	f, err := os.OpenFile(filepath.Join(s.dir, SyncLogFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2026-`)
	f.Close()
	if err := s.RecordSync(SyncRecord{Time: time.Unix(1000, 0).UTC(), Error: "boom", Pending: 3}); err != nil {
		t.Fatal(err)
	}
	last, ran, err := s.LastSync()
	if err != nil || !ran {
		t.Fatalf("LastSync() = %v, %v", ran, err)
	}
	if last.Error != "boom" || last.Pending != 3 || last.OK() {
		t.Errorf("LastSync() = %+v, want the failed run with 3 pending", last)
	}
}
