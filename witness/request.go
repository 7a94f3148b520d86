package witness

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// maxProofLines is the most consistency proof lines tlog-witness lets a
// client send.
const maxProofLines = 63

// addRequest is a parsed tlog-witness add-checkpoint request body.
type addRequest struct {
	// OldSize is the size of the checkpoint the client believes the witness
	// has cosigned most recently.
	OldSize uint64
	// Proof is the consistency proof from OldSize to the checkpoint's size.
	Proof [][]byte
	// Checkpoint is the signed note, verbatim.
	Checkpoint []byte
}

// errMalformed marks requests that do not follow the tlog-witness or
// tlog-checkpoint syntax. It maps to 400 Bad Request.
var errMalformed = errors.New("malformed request")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errMalformed, fmt.Sprintf(format, args...))
}

// parseAddRequest parses an add-checkpoint body: an old size line, zero to 63
// base64 hash lines, an empty line and a checkpoint. Every line ends in a
// newline; sizes have no leading zeroes and hashes are canonical base64 of 32
// bytes, so that marshal(parse(b)) == b.
func parseAddRequest(body []byte) (*addRequest, error) {
	line, rest, ok := bytes.Cut(body, []byte("\n"))
	if !ok {
		return nil, malformed("missing old size line")
	}
	size, ok := bytes.CutPrefix(line, []byte("old "))
	if !ok {
		return nil, malformed("first line does not start with %q", "old ")
	}
	oldSize, err := parseSize(size)
	if err != nil {
		return nil, malformed("old size: %v", err)
	}
	r := &addRequest{OldSize: oldSize}
	for {
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		if !ok {
			return nil, malformed("missing empty line before the checkpoint")
		}
		if len(line) == 0 {
			break
		}
		if len(r.Proof) == maxProofLines {
			return nil, malformed("more than %d consistency proof lines", maxProofLines)
		}
		h, err := parseHash(line)
		if err != nil {
			return nil, malformed("consistency proof line %d: %v", len(r.Proof)+1, err)
		}
		r.Proof = append(r.Proof, h)
	}
	if len(rest) == 0 {
		return nil, malformed("missing checkpoint")
	}
	r.Checkpoint = rest
	return r, nil
}

// marshal encodes r as an add-checkpoint body.
func (r *addRequest) marshal() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", r.OldSize)
	for _, h := range r.Proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.Write(r.Checkpoint)
	return b.Bytes()
}

// parseSize parses a tree size: ASCII decimal, no sign, no leading zeroes
// unless it is 0. Sizes are at most 2^63-1 so that SQLite can store them.
func parseSize(b []byte) (uint64, error) {
	if len(b) == 0 {
		return 0, errors.New("empty size")
	}
	if len(b) > 1 && b[0] == '0' {
		return 0, fmt.Errorf("size %q has a leading zero", b)
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("size %q is not a decimal number", b)
		}
	}
	n, err := strconv.ParseUint(string(b), 10, 64)
	if err != nil || n > math.MaxInt64 {
		return 0, fmt.Errorf("size %q is too large", b)
	}
	return n, nil
}

// parseHash decodes a canonical standard base64 encoding of a 32-byte hash.
func parseHash(b []byte) ([]byte, error) {
	h := make([]byte, base64.StdEncoding.DecodedLen(len(b)))
	n, err := base64.StdEncoding.Decode(h, b)
	if err != nil || n != 32 || base64.StdEncoding.EncodeToString(h[:n]) != string(b) {
		return nil, fmt.Errorf("%q is not a base64 32-byte hash", b)
	}
	return h[:n], nil
}
