package witness

import (
	"fmt"

	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
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

// ParseLogs returns the logs listed in a C2SP tlog-policy file, one Log per
// "log <vkey> [<url>]" line, after c2sp.ParsePolicy checked the whole file:
// the witness, group and quorum lines configure verifiers rather than
// witnesses, but must be valid, and the file needs its quorum line ("quorum
// none" for a file that only lists logs).
func ParseLogs(policy []byte) ([]Log, error) {
	p, err := c2sp.ParsePolicy(policy)
	if err != nil {
		return nil, err
	}
	logs := make([]Log, len(p.Logs))
	for i, l := range p.Logs {
		logs[i] = Log{VKey: l.VKey, URL: l.URL}
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
