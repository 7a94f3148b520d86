package logcmd

import (
	"strings"
	"testing"

	"github.com/docketlog/docket/log"
)

func TestCheckFDs(t *testing.T) {
	tests := []struct {
		name     string
		maxConns int
		limit    uint64
		wantErr  string
	}{
		{name: "default under a small limit", maxConns: 1024, limit: 1024, wantErr: "lower -max-conns to 614"},
		{name: "default", maxConns: 1024, limit: 65536},
		{name: "exactly enough", maxConns: 1024, limit: uint64(log.ConnsFDs(1024) + storageFDs)},
		{name: "one short", maxConns: 1024, limit: uint64(log.ConnsFDs(1024) + storageFDs - 1), wantErr: "needs 1537 file descriptors"},
		{name: "limit unknown", maxConns: 1 << 20, limit: 0},
		{name: "no room for any connection", maxConns: 1, limit: 100, wantErr: "lower -max-conns to 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkFDs(tt.maxConns, tt.limit)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("checkFDs(%d, %d) = %v, want nil", tt.maxConns, tt.limit, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("checkFDs(%d, %d) = %v, want an error with %q", tt.maxConns, tt.limit, err, tt.wantErr)
			}
		})
	}
	// The suggested -max-conns passes, one more does not.
	for _, limit := range []uint64{300, 1024, 4096, 65536} {
		n := maxConnsFor(limit)
		if n > 0 && checkFDs(n, limit) != nil || checkFDs(n+1, limit) == nil {
			t.Errorf("maxConnsFor(%d) = %d: not the largest -max-conns checkFDs accepts", limit, n)
		}
	}
}
