package witness

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// Log is a log the witness cosigns for.
type Log struct {
	// VKey is the log's Ed25519 signed-note verifier key. Its name is the
	// log's origin line. Several keys may share an origin (key rotation): a
	// checkpoint is accepted if one of them signed it.
	VKey string
	// URL is the log's URL from the policy file, if any. It is informational.
	URL string
}

// ParseLogs returns the logs listed in a C2SP tlog-policy file: one Log per
// "log <vkey> [<url>]" line. The witness, group and quorum lines, which
// configure verifiers rather than witnesses, are accepted and ignored; a file
// with only log lines is valid. Unknown keywords, characters the format does
// not allow, malformed or non-Ed25519 keys and duplicate keys are errors.
func ParseLogs(policy []byte) ([]Log, error) {
	var logs []Log
	seen := make(map[string]int) // public key material -> line number
	for i, line := range bytes.Split(policy, []byte("\n")) {
		lineNo := i + 1
		for _, c := range line {
			if c != '\t' && (c < 0x20 || c == 0x7f) {
				return nil, fmt.Errorf("policy line %d: control character %#02x", lineNo, c)
			}
		}
		fields := strings.FieldsFunc(string(line), func(r rune) bool { return r == ' ' || r == '\t' })
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch fields[0] {
		case "log":
			if len(fields) < 2 || len(fields) > 3 {
				return nil, fmt.Errorf("policy line %d: want \"log <vkey> [<url>]\"", lineNo)
			}
			vkey := fields[1]
			if _, err := note.NewVerifier(vkey); err != nil {
				return nil, fmt.Errorf("policy line %d: log key %q: %v", lineNo, vkey, err)
			}
			// name+hash+base64(type ‖ key); the base64 part may itself contain '+'.
			key := strings.SplitN(vkey, "+", 3)[2]
			if raw, err := base64.StdEncoding.DecodeString(key); err == nil && len(raw) > 1 {
				key = string(raw[1:]) // the public key without its type byte
			}
			if prev, ok := seen[key]; ok {
				return nil, fmt.Errorf("policy line %d: log key duplicates the key on line %d", lineNo, prev)
			}
			seen[key] = lineNo
			l := Log{VKey: vkey}
			if len(fields) == 3 {
				l.URL = fields[2]
			}
			logs = append(logs, l)
		case "witness", "group", "quorum":
			// Verifier configuration: not the witness's concern.
		default:
			return nil, fmt.Errorf("policy line %d: unknown keyword %q", lineNo, fields[0])
		}
	}
	return logs, nil
}

// logSet is an immutable view of the configured logs.
type logSet struct {
	// byOrigin maps an origin to the verifiers of its keys.
	byOrigin map[string]note.Verifiers
}

func newLogSet(logs []Log) (*logSet, error) {
	keys := make(map[string][]note.Verifier)
	for _, l := range logs {
		v, err := note.NewVerifier(l.VKey)
		if err != nil {
			return nil, fmt.Errorf("log key %q: %v", l.VKey, err)
		}
		keys[v.Name()] = append(keys[v.Name()], v)
	}
	s := &logSet{byOrigin: make(map[string]note.Verifiers, len(keys))}
	for origin, vs := range keys {
		s.byOrigin[origin] = note.VerifierList(vs...)
	}
	return s, nil
}
