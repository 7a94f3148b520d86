package logcmd

import (
	"fmt"

	"github.com/docketlog/docket/log"
)

// storageFDs is the file descriptors docket-log keeps for everything but
// its connections: Tessera's lock, temporary, bundle and tile files, the
// dedup index's database, its write-ahead log and shared memory on each
// connection, witnesses and the database with other storage.
const storageFDs = 256

// checkFDs refuses a -max-conns whose connections, with the storage's
// files, need more file descriptors than the process may open (limit,
// 0: unknown). Without it, connections could take the last descriptor:
// Tessera's POSIX driver panics when it cannot open its lock file
// (storage/posix lockFile), which ended docket-log in the middle of a
// benchmark at 2,000 clients (issue 28).
func checkFDs(maxConns int, limit uint64) error {
	need := uint64(log.ConnsFDs(maxConns) + storageFDs)
	if limit == 0 || need <= limit {
		return nil
	}
	return fmt.Errorf("-max-conns %d needs %d file descriptors with the storage's, and the limit is %d: raise it (LimitNOFILE in the unit, ulimit -n) or lower -max-conns to %d",
		maxConns, need, limit, maxConnsFor(limit))
}

// maxConnsFor returns the largest -max-conns that checkFDs accepts under
// limit (0 if none).
func maxConnsFor(limit uint64) int {
	n := 0
	for step := 1 << 20; step > 0; step >>= 1 {
		if uint64(log.ConnsFDs(n+step)+storageFDs) <= limit {
			n += step
		}
	}
	return n
}
