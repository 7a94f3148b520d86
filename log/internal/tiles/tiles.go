// Package tiles holds what the log's storages need about C2SP tlog-tiles
// resources (https://c2sp.org/tlog-tiles): a partial tile or entry bundle
// of width W holds exactly W hashes or entries, and is served as
// immutable, so a storage that answers with a wider one must trim it.
package tiles

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// TrimTile returns the first w hashes of hash tile t (w = 0: all of it).
// It fails if t holds fewer.
func TrimTile(t []byte, w uint8) ([]byte, error) {
	if w == 0 {
		return t, nil
	}
	n := int(w) * sha256.Size
	if len(t) < n {
		return nil, fmt.Errorf("tile holds %d hashes, fewer than %d", len(t)/sha256.Size, w)
	}
	return t[:n], nil
}

// TrimBundle returns the first w entries of entry bundle b (w = 0: all of
// it), whose entries are each a 2-byte big-endian length and that many
// bytes. It fails if b holds fewer.
func TrimBundle(b []byte, w uint8) ([]byte, error) {
	if w == 0 {
		return b, nil
	}
	off := 0
	for range int(w) {
		if off+2 > len(b) {
			return nil, fmt.Errorf("entry bundle holds fewer than %d entries", w)
		}
		off += 2 + int(binary.BigEndian.Uint16(b[off:]))
	}
	if off > len(b) {
		return nil, fmt.Errorf("entry bundle holds fewer than %d entries", w)
	}
	return b[:off], nil
}
