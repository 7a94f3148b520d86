package witness

import (
	"bytes"
)

// checkpoint is the body of a C2SP tlog-checkpoint: origin line, tree size,
// root hash, and optional extension lines (which the cosignature covers but
// the witness does not interpret).
type checkpoint struct {
	Origin string
	Size   uint64
	Root   []byte
}

// parseCheckpoint parses a checkpoint note body (the signed text, ending in a
// newline, without signature lines).
func parseCheckpoint(text []byte) (checkpoint, error) {
	lines := bytes.SplitN(text, []byte("\n"), 4)
	if len(lines) < 4 {
		return checkpoint{}, malformed("checkpoint has fewer than three lines")
	}
	if len(lines[0]) == 0 {
		return checkpoint{}, malformed("checkpoint has an empty origin line")
	}
	size, err := parseSize(lines[1])
	if err != nil {
		return checkpoint{}, malformed("checkpoint size: %v", err)
	}
	root, err := parseHash(lines[2])
	if err != nil {
		return checkpoint{}, malformed("checkpoint root hash: %v", err)
	}
	for ext := lines[3]; len(ext) > 0; {
		var line []byte
		line, ext, _ = bytes.Cut(ext, []byte("\n"))
		if len(line) == 0 {
			return checkpoint{}, malformed("checkpoint has an empty extension line")
		}
	}
	return checkpoint{Origin: string(lines[0]), Size: size, Root: root}, nil
}

// originOf returns the first line of a note: the origin, for a checkpoint.
func originOf(signedNote []byte) string {
	origin, _, _ := bytes.Cut(signedNote, []byte("\n"))
	return string(origin)
}
