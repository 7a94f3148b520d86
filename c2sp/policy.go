package c2sp

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

// NoQuorum is the predefined name of "quorum none": no cosignature is
// required.
const NoQuorum = "none"

// Signature types of vkeys (C2SP signed-note, tlog-cosignature).
const (
	sigEd25519          = 0x01
	sigCosignatureV1    = 0x04
	sigMLDSACosignature = 0x06
)

// A Policy is a parsed C2SP tlog-policy file (https://c2sp.org/tlog-policy):
// the logs a verifier accepts, the witnesses and groups, and the quorum a
// checkpoint's cosignatures must satisfy. A Policy is immutable and safe for
// concurrent use.
type Policy struct {
	// Logs are the "log" lines, in file order. It may be empty: the log is
	// then known from other context.
	Logs []Log
	// Witnesses are the "witness" lines, in file order.
	Witnesses []Witness
	// Groups are the "group" lines, in file order. A group's members are
	// defined before it.
	Groups []Group
	// Quorum is the name of the witness or group on the "quorum" line, or
	// NoQuorum.
	Quorum string
}

// A Log is a "log <vkey> [<url>]" line.
type Log struct {
	// VKey is the log's Ed25519 signed-note verifier key; its name is the
	// log's origin.
	VKey string
	// URL is the log's URL, or "". Its meaning is up to the application.
	URL string

	verifier note.Verifier
}

// Verifier returns the note verifier of the log's key.
func (l Log) Verifier() note.Verifier { return l.verifier }

// Origin returns the log's origin: the name of its key.
func (l Log) Origin() string { return l.verifier.Name() }

// A Witness is a "witness <name> <vkey> [<url>]" line.
type Witness struct {
	Name string
	// VKey is the witness's cosignature/v1 verifier key (type 0x04 or 0x06).
	VKey string
	// URL is the witness's submission prefix, or "".
	URL string

	verifier note.Verifier
}

// Verifier returns the cosignature/v1 verifier of the witness's key.
func (w Witness) Verifier() note.Verifier { return w.verifier }

// A Group is a "group <name> <k> <name>..." line ("all" and "any" are stored
// as their k): it witnesses a checkpoint when at least K of its Members do.
type Group struct {
	Name    string
	K       int
	Members []string
}

// ErrPolicy marks every error of ParsePolicy.
var ErrPolicy = errors.New("invalid tlog-policy")

// ParsePolicy parses a C2SP tlog-policy file and enforces every rule of the
// specification: lines end in a newline and hold items separated by spaces
// and tabs; the only control characters are tab and newline (so CRLF is
// refused); comment lines start with "#" after optional white space; log
// keys are Ed25519 signed-note keys (type 0x01) and witness keys
// cosignature/v1 keys (0x04 Ed25519, 0x06 ML-DSA-44), each with the key ID
// of its key, and no key is listed twice (the same public key under another
// name is a duplicate); names of witnesses and groups are unique and not
// "none"; a group lists at least one member, each defined on a preceding
// line and not "none", with 1 <= k <= n; each name is a group member at most
// once in the whole file; and there is exactly one quorum line, naming
// "none" or a witness or group defined before it. Errors wrap ErrPolicy and
// name the line.
func ParsePolicy(data []byte) (*Policy, error) {
	p := &Policy{}
	defined := make(map[string]bool) // witness and group names
	member := make(map[string]int)   // name -> line listing it as a member
	logKeys := make(map[string]int)  // public key -> line
	witnessKeys := make(map[string]int)
	quorumLine := 0
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		line, rest, ok := bytes.Cut(data, []byte("\n"))
		if !ok {
			return nil, policyErr(lineNo, "line does not end in a newline")
		}
		data = rest
		for _, c := range line {
			if c != '\t' && (c < 0x20 || c == 0x7f) {
				return nil, policyErr(lineNo, "control character %#02x", c)
			}
		}
		f := strings.FieldsFunc(string(line), func(r rune) bool { return r == ' ' || r == '\t' })
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch f[0] {
		case "log":
			if len(f) < 2 || len(f) > 3 {
				return nil, policyErr(lineNo, "want \"log <vkey> [<url>]\"")
			}
			v, key, err := parseVKey(f[1], sigEd25519)
			if err != nil {
				return nil, policyErr(lineNo, "log key: %v", err)
			}
			if prev, ok := logKeys[key]; ok {
				return nil, policyErr(lineNo, "log key duplicates the key on line %d", prev)
			}
			logKeys[key] = lineNo
			l := Log{VKey: f[1], verifier: v}
			if len(f) == 3 {
				l.URL = f[2]
			}
			p.Logs = append(p.Logs, l)
		case "witness":
			if len(f) < 3 || len(f) > 4 {
				return nil, policyErr(lineNo, "want \"witness <name> <vkey> [<url>]\"")
			}
			if err := checkNewName(f[1], defined); err != nil {
				return nil, policyErr(lineNo, "%v", err)
			}
			v, key, err := parseVKey(f[2], sigCosignatureV1, sigMLDSACosignature)
			if err != nil {
				return nil, policyErr(lineNo, "witness %s key: %v", f[1], err)
			}
			if prev, ok := witnessKeys[key]; ok {
				return nil, policyErr(lineNo, "witness key duplicates the key on line %d", prev)
			}
			witnessKeys[key] = lineNo
			defined[f[1]] = true
			w := Witness{Name: f[1], VKey: f[2], verifier: v}
			if len(f) == 4 {
				w.URL = f[3]
			}
			p.Witnesses = append(p.Witnesses, w)
		case "group":
			if len(f) < 4 {
				return nil, policyErr(lineNo, "want \"group <name> <all|any|k> <name>...\" with at least one member")
			}
			if err := checkNewName(f[1], defined); err != nil {
				return nil, policyErr(lineNo, "%v", err)
			}
			g := Group{Name: f[1], Members: f[3:]}
			for _, m := range g.Members {
				if m == NoQuorum {
					return nil, policyErr(lineNo, "%q cannot be a group member", NoQuorum)
				}
				if !defined[m] {
					return nil, policyErr(lineNo, "member %q is not defined on a preceding line", m)
				}
				if prev, ok := member[m]; ok {
					return nil, policyErr(lineNo, "%q is already a group member on line %d", m, prev)
				}
				member[m] = lineNo
			}
			n := len(g.Members)
			switch f[2] {
			case "all":
				g.K = n
			case "any":
				g.K = 1
			default:
				k, err := parseThreshold(f[2])
				if err != nil || k < 1 || k > n {
					return nil, policyErr(lineNo, "threshold %q is not all, any or a decimal k with 1 <= k <= %d", f[2], n)
				}
				g.K = k
			}
			defined[g.Name] = true
			p.Groups = append(p.Groups, g)
		case "quorum":
			if len(f) != 2 {
				return nil, policyErr(lineNo, "want \"quorum <name>\"")
			}
			if quorumLine != 0 {
				return nil, policyErr(lineNo, "second quorum line (the first is line %d)", quorumLine)
			}
			if f[1] != NoQuorum && !defined[f[1]] {
				return nil, policyErr(lineNo, "quorum %q is not defined on a preceding line", f[1])
			}
			quorumLine = lineNo
			p.Quorum = f[1]
		default:
			return nil, policyErr(lineNo, "unknown keyword %q", f[0])
		}
	}
	if quorumLine == 0 {
		return nil, fmt.Errorf("%w: no quorum line (\"quorum none\" if no cosignature is required)", ErrPolicy)
	}
	return p, nil
}

func policyErr(line int, format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrPolicy, line, fmt.Sprintf(format, args...))
}

func checkNewName(name string, defined map[string]bool) error {
	if name == NoQuorum {
		return fmt.Errorf("the name %q is predefined", NoQuorum)
	}
	if defined[name] {
		return fmt.Errorf("the name %q is already defined", name)
	}
	return nil
}

// parseThreshold parses a decimal group threshold: ASCII digits only.
func parseThreshold(s string) (int, error) {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, errors.New("not decimal")
		}
	}
	return strconv.Atoi(s)
}

// parseVKey parses a signed-note verifier key of one of the signature types
// allowed, and returns its verifier and its public key (type byte dropped),
// which is what makes two vkeys duplicates.
func parseVKey(vkey string, types ...byte) (note.Verifier, string, error) {
	// name+hash+base64(type ‖ key); the base64 part may itself contain '+'.
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) != 3 {
		return nil, "", errors.New("malformed verifier key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[2])
	if err != nil || len(raw) < 2 {
		return nil, "", errors.New("malformed verifier key")
	}
	if bytes.IndexByte(types, raw[0]) < 0 {
		return nil, "", fmt.Errorf("signature type %#02x is not allowed here", raw[0])
	}
	var v note.Verifier
	if raw[0] == sigEd25519 {
		v, err = note.NewVerifier(vkey)
	} else {
		v, err = fnote.NewVerifierForCosignatureV1(vkey)
	}
	if err != nil {
		return nil, "", err
	}
	if raw[0] != sigMLDSACosignature && len(raw) != 1+ed25519.PublicKeySize {
		return nil, "", errors.New("malformed Ed25519 verifier key")
	}
	if parts[1] != fmt.Sprintf("%08x", v.KeyHash()) {
		return nil, "", fmt.Errorf("key ID %s is not the key's (%08x)", parts[1], v.KeyHash())
	}
	return v, string(raw[1:]), nil
}

// Unwitnessed reports whether the policy is "quorum none".
func (p *Policy) Unwitnessed() bool { return p.Quorum == NoQuorum }

// HasLog reports whether the policy lists no logs, or lists vkey (or another
// vkey of the same public key). A verifier pinned to vkey uses it to refuse a
// policy written for other logs.
func (p *Policy) HasLog(vkey string) bool {
	if len(p.Logs) == 0 {
		return true
	}
	_, key, err := parseVKey(vkey, sigEd25519)
	if err != nil {
		return false
	}
	for _, l := range p.Logs {
		if _, k, _ := parseVKey(l.VKey, sigEd25519); k == key {
			return true
		}
	}
	return false
}

// Satisfied reports whether the signed note signedCheckpoint carries valid
// cosignatures that satisfy the quorum. Each witness counts at most once,
// and a cosignature that fails to verify under a listed key counts for
// nothing. The log's own signature is not checked here (see VerifyCheckpoint).
func (p *Policy) Satisfied(signedCheckpoint []byte) bool {
	if p.Unwitnessed() {
		return true
	}
	witnessed := make(map[string]bool, len(p.Witnesses)+len(p.Groups))
	for _, w := range p.Witnesses {
		n, err := note.Open(signedCheckpoint, note.VerifierList(w.verifier))
		witnessed[w.Name] = err == nil && len(n.Sigs) == 1
	}
	for _, g := range p.Groups {
		k := 0
		for _, m := range g.Members {
			if witnessed[m] {
				k++
			}
		}
		witnessed[g.Name] = k >= g.K
	}
	return witnessed[p.Quorum]
}

// Verifiers returns the verifiers of the policy's log keys.
func (p *Policy) Verifiers() note.Verifiers {
	vs := make([]note.Verifier, len(p.Logs))
	for i, l := range p.Logs {
		vs[i] = l.verifier
	}
	return note.VerifierList(vs...)
}

// VerifyCheckpoint checks that signedCheckpoint is a checkpoint signed by
// one of the policy's logs and cosigned by its quorum, and returns it. A
// policy without logs accepts no checkpoint here: pin the log's key with a
// ProofVerifier instead.
func (p *Policy) VerifyCheckpoint(signedCheckpoint []byte) (*Checkpoint, error) {
	n, err := note.Open(signedCheckpoint, p.Verifiers())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpointSig, err)
	}
	cp, err := ParseCheckpoint([]byte(n.Text))
	if err != nil {
		return nil, err
	}
	if cp.Origin != n.Sigs[0].Name {
		return nil, fmt.Errorf("%w: origin %q is not the key name %q", ErrCheckpointSig, cp.Origin, n.Sigs[0].Name)
	}
	if !p.Satisfied(signedCheckpoint) {
		return nil, fmt.Errorf("%w: checkpoint of size %d", ErrWitnessQuorum, cp.Size)
	}
	return cp, nil
}
