package c2sp

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// testKeys are keys for policy tests: two logs and three witnesses.
type testKeys struct {
	log1, log2             string // log vkeys
	w1, w2, w3             string // cosignature/v1 vkeys
	s1, s2, s3             note.Signer
	log1Signer, log2Signer note.Signer
}

func newTestKeys(t testing.TB) *testKeys {
	t.Helper()
	k := &testKeys{}
	k.log1Signer, k.log1 = newLogKey(t, "example.com/log1")
	k.log2Signer, k.log2 = newLogKey(t, "example.com/log2")
	k.s1, k.w1 = newWitnessKey(t, "w1.example")
	k.s2, k.w2 = newWitnessKey(t, "w2.example")
	k.s3, k.w3 = newWitnessKey(t, "w3.example")
	return k
}

func newLogKey(t testing.TB, origin string) (note.Signer, string) {
	t.Helper()
	skey, vkey, err := GenerateKey(origin)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s, vkey
}

func newWitnessKey(t testing.TB, name string) (note.Signer, string) {
	t.Helper()
	skey, _, err := GenerateKey(name)
	if err != nil {
		t.Fatal(err)
	}
	s, vkey, err := NewCosigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s, vkey
}

// renamed returns a vkey of the same public key and signature type (0x01 or
// 0x04) under another key name, with its own key ID.
func renamed(t testing.TB, vkey, name string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(strings.SplitN(vkey, "+", 3)[2])
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewEd25519VerifierKey(name, ed25519.PublicKey(raw[1:]))
	if err != nil {
		t.Fatal(err)
	}
	if raw[0] == sigCosignatureV1 {
		if v, err = CosignatureVKey(v); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// wrongID returns vkey with another key ID.
func wrongID(vkey string) string {
	parts := strings.SplitN(vkey, "+", 3)
	id := []byte(parts[1])
	id[0] = "01"[(id[0]-'0'+1)%2]
	return parts[0] + "+" + string(id) + "+" + parts[2]
}

// TestParsePolicySpec has one policy per rule of C2SP tlog-policy: the
// sentence it breaks (or follows) is the test's name.
func TestParsePolicySpec(t *testing.T) {
	k := newTestKeys(t)
	_, logAsWitness, _ := note.GenerateKey(rand.Reader, "w.example")
	tests := []struct {
		name   string
		policy string
		ok     bool
	}{
		// What is a "policy"?
		{"only the quorum is mandatory", "quorum none\n", true},
		{"a policy without a quorum line is refused", "log " + k.log1 + "\n", false},
		{"an empty file has no quorum", "", false},
		{"quorum none with an empty set of witnesses", "log " + k.log1 + "\nquorum none\n", true},
		{"a policy with an empty set of logs", "witness w1 " + k.w1 + "\nquorum w1\n", true},
		// Structure.
		{"each line is terminated by newline", "quorum none", false},
		{"CRLF line ends are refused", "log " + k.log1 + "\r\nquorum none\r\n", false},
		{"CR at the end of the quorum line is refused", "quorum none\r\n", false},
		{"whitespace is space and tab", "\tlog \t" + k.log1 + "  https://log.example/ \t\nquorum\tnone\n", true},
		{"vertical tab is not whitespace", "log\v" + k.log1 + "\nquorum none\n", false},
		{"form feed is not whitespace", "quorum\fnone\n", false},
		{"non-breaking space is not whitespace", "quorum\xc2\xa0none\n", false},
		{"empty and whitespace-only lines are ignored", "\n \t\n\nquorum none\n\n", true},
		{"comment lines are ignored", "# a comment\n  \t# indented comment\nquorum none\n", true},
		{"a comment after items is not a comment line", "quorum none # trailing\n", false},
		{"a comment after a witness line is not a comment line", "witness w1 " + k.w1 + " # c\nquorum w1\n", false},
		{"logs and witnesses in any order", "witness w1 " + k.w1 + "\nlog " + k.log1 + "\nwitness w2 " + k.w2 + "\nlog " + k.log2 + "\ngroup g any w1 w2\nquorum g\n", true},
		{"a group references only preceding names", "group g any w1\nwitness w1 " + k.w1 + "\nquorum g\n", false},
		{"the quorum names a witness defined earlier", "quorum w1\nwitness w1 " + k.w1 + "\n", false},
		{"the quorum names a group defined earlier", "witness w1 " + k.w1 + "\nquorum g\ngroup g any w1\n", false},
		{"log lines may follow the quorum line", "quorum none\nlog " + k.log1 + "\n", true},
		{"unknown keywords are refused", "logs " + k.log1 + "\nquorum none\n", false},
		{"keywords are case sensitive", "Quorum none\n", false},
		// Public key representation.
		{"a log key is a signed-note Ed25519 key", "log example.com/a+00000000+AAAA\nquorum none\n", false},
		{"a cosignature key is not a log key", "log " + k.w1 + "\nquorum none\n", false},
		{"a log key is not a witness key", "witness w " + logAsWitness + "\nquorum w\n", false},
		{"a witness key is not malformed", "witness w1 w1.example+01234567+BAAA\nquorum w1\n", false},
		{"a witness key's ID is the key's", "witness w1 " + wrongID(k.w1) + "\nquorum w1\n", false},
		{"a log key's ID is the key's", "log " + wrongID(k.log1) + "\nquorum none\n", false},
		{"duplicate log keys are refused", "log " + k.log1 + "\nlog " + k.log1 + "\nquorum none\n", false},
		{"a log key under another name is a duplicate", "log " + k.log1 + "\nlog " + renamed(t, k.log1, "other.example/log") + "\nquorum none\n", false},
		{"duplicate witness keys are refused", "witness w1 " + k.w1 + "\nwitness w2 " + k.w1 + "\ngroup g 2 w1 w2\nquorum g\n", false},
		{"a witness key under another name is a duplicate", "witness w1 " + k.w1 + "\nwitness w2 " + renamed(t, k.w1, "other.example") + "\nquorum w1\n", false},
		// Defining a log.
		{"log with a URL", "log " + k.log1 + " https://log.example/\nquorum none\n", true},
		{"log without a key", "log\nquorum none\n", false},
		{"log with too many items", "log " + k.log1 + " https://log.example/ extra\nquorum none\n", false},
		// Defining a witness.
		{"witness with a URL", "witness w1 " + k.w1 + " https://w1.example/\nquorum w1\n", true},
		{"witness without a key", "witness w1\nquorum none\n", false},
		{"witness with too many items", "witness w1 " + k.w1 + " https://w1.example/ extra\nquorum w1\n", false},
		// Defining the quorum.
		{"quorum with a witness", "witness w1 " + k.w1 + "\nquorum w1\n", true},
		{"quorum none", "quorum none\n", true},
		{"quorum of an undefined name", "witness w1 " + k.w1 + "\nquorum w9\n", false},
		{"exactly one quorum line", "witness w1 " + k.w1 + "\nwitness w2 " + k.w2 + "\nquorum w1\nquorum w2\n", false},
		{"two quorum none lines", "quorum none\nquorum none\n", false},
		{"quorum without a name", "quorum\n", false},
		{"quorum with two names", "witness w1 " + k.w1 + "\nwitness w2 " + k.w2 + "\nquorum w1 w2\n", false},
		// Defining a witness group.
		{"group all", "witness w1 " + k.w1 + "\nwitness w2 " + k.w2 + "\ngroup g all w1 w2\nquorum g\n", true},
		{"group any", "witness w1 " + k.w1 + "\nwitness w2 " + k.w2 + "\ngroup g any w1 w2\nquorum g\n", true},
		{"group k of n", "witness w1 " + k.w1 + "\nwitness w2 " + k.w2 + "\ngroup g 2 w1 w2\nquorum g\n", true},
		{"at least one member", "group g any\nquorum none\n", false},
		{"k = 0 is refused", "witness w9 " + k.w1 + "\ngroup g 0 w9\nquorum g\n", false},
		{"k > n is refused", "witness w1 " + k.w1 + "\ngroup g 2 w1\nquorum g\n", false},
		{"k is decimal", "witness w1 " + k.w1 + "\ngroup g 0x1 w1\nquorum g\n", false},
		{"k has no sign", "witness w1 " + k.w1 + "\ngroup g +1 w1\nquorum g\n", false},
		{"k is not negative", "witness w1 " + k.w1 + "\ngroup g -1 w1\nquorum g\n", false},
		{"k is not huge", "witness w1 " + k.w1 + "\ngroup g 99999999999999999999 w1\nquorum g\n", false},
		{"a name is a member of a group at most once", "witness w1 " + k.w1 + "\ngroup g 2 w1 w1\nquorum g\n", false},
		{"a name is a group member at most once in the file", "witness w1 " + k.w1 + "\nwitness w2 " + k.w2 + "\ngroup a any w1\ngroup b any w1 w2\ngroup c all a b\nquorum c\n", false},
		{"groups of groups", "witness w1 " + k.w1 + "\nwitness w2 " + k.w2 + "\nwitness w3 " + k.w3 + "\ngroup a any w1 w2\ngroup b all a w3\nquorum b\n", true},
		{"none is not a group member", "witness w1 " + k.w1 + "\ngroup g any w1 none\nquorum g\n", false},
		{"a group may not name itself", "witness w1 " + k.w1 + "\ngroup g any w1 g\nquorum g\n", false},
		// Names.
		{"witnesses and groups share one namespace", "witness w1 " + k.w1 + "\ngroup w1 any w1\nquorum w1\n", false},
		{"witness names are unique", "witness w1 " + k.w1 + "\nwitness w1 " + k.w2 + "\nquorum w1\n", false},
		{"group names are unique", "witness w1 " + k.w1 + "\nwitness w2 " + k.w2 + "\ngroup g any w1\ngroup g any w2\nquorum g\n", false},
		{"none is predefined: no witness named none", "witness none " + k.w1 + "\nquorum none\n", false},
		{"none is predefined: no group named none", "witness w1 " + k.w1 + "\ngroup none any w1\nquorum none\n", false},
		// Character set.
		{"DEL is refused", "quorum none\x7f\n", false},
		{"NUL is refused", "quorum none\x00\n", false},
		{"octets 0x80-0xFF are allowed in names", "witness w\xe2\x84\xaa " + k.w1 + "\nquorum w\xe2\x84\xaa\n", true},
		{"names are opaque octets", "witness \xe2\x84\xaa " + k.w1 + "\nquorum K\n", false},
		{"octets 0x80-0xFF are allowed in comments", "# caf\xc3\xa9 \xff\nquorum none\n", true},
	}
	// Refusals that must name their rule, not fail for another reason.
	because := map[string]string{
		"duplicate log keys are refused":                    "log key duplicates the key on line 1",
		"a log key under another name is a duplicate":       "log key duplicates the key on line 1",
		"duplicate witness keys are refused":                "witness key duplicates the key on line 1",
		"a witness key under another name is a duplicate":   "witness key duplicates the key on line 1",
		"a name is a member of a group at most once":        `"w1" is already a group member on line 2`,
		"a name is a group member at most once in the file": `"w1" is already a group member on line 3`,
		"k = 0 is refused":                                  `threshold "0"`,
		"k > n is refused":                                  `threshold "2"`,
		"exactly one quorum line":                           "second quorum line",
		"the quorum names a group defined earlier":          `quorum "g" is not defined on a preceding line`,
		"CRLF line ends are refused":                        "control character 0x0d",
		"none is not a group member":                        `"none" cannot be a group member`,
		"none is predefined: no witness named none":         `the name "none" is predefined`,
		"a witness key's ID is the key's":                   "key ID",
		"a group references only preceding names":           `member "w1" is not defined on a preceding line`,
	}
	for name := range because {
		if !slices.ContainsFunc(tests, func(tt struct {
			name   string
			policy string
			ok     bool
		}) bool {
			return tt.name == name
		}) {
			t.Errorf("because names no test %q", name)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tt.policy))
			if (err == nil) != tt.ok {
				t.Fatalf("ParsePolicy(%q) = %v, want ok %v", tt.policy, err, tt.ok)
			}
			if want := because[tt.name]; want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
				t.Errorf("ParsePolicy(%q) = %v, want an error saying %q", tt.policy, err, want)
			}
			if err != nil && !errors.Is(err, ErrPolicy) {
				t.Errorf("ParsePolicy(%q) = %v, want an ErrPolicy", tt.policy, err)
			}
			if err == nil && p.Quorum == "" {
				t.Errorf("ParsePolicy(%q).Quorum is empty", tt.policy)
			}
		})
	}
}

func TestParsePolicyFields(t *testing.T) {
	k := newTestKeys(t)
	text := fmt.Sprintf("log %s https://log.example/\nlog %s\nwitness w1 %s https://w1.example/\nwitness w2 %s\nwitness w3 %s\ngroup g1 any w1 w2\ngroup g2 2 g1 w3\nquorum g2\n",
		k.log1, k.log2, k.w1, k.w2, k.w3)
	p, err := ParsePolicy([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Logs) != 2 || p.Logs[0].VKey != k.log1 || p.Logs[0].URL != "https://log.example/" || p.Logs[1].URL != "" {
		t.Errorf("Logs = %+v, want log1 with its URL and log2", p.Logs)
	}
	if p.Logs[0].Origin() != "example.com/log1" {
		t.Errorf("Logs[0].Origin() = %q, want example.com/log1", p.Logs[0].Origin())
	}
	if len(p.Witnesses) != 3 || p.Witnesses[0].Name != "w1" || p.Witnesses[0].URL != "https://w1.example/" || p.Witnesses[2].VKey != k.w3 {
		t.Errorf("Witnesses = %+v", p.Witnesses)
	}
	if len(p.Groups) != 2 || p.Groups[0].K != 1 || p.Groups[1].K != 2 || strings.Join(p.Groups[1].Members, ",") != "g1,w3" {
		t.Errorf("Groups = %+v", p.Groups)
	}
	if p.Quorum != "g2" || p.Unwitnessed() {
		t.Errorf("Quorum = %q, Unwitnessed() = %v, want g2, false", p.Quorum, p.Unwitnessed())
	}
	if !p.HasLog(renamed(t, k.log2, "other.example/log2")) || p.HasLog(k.w1) {
		t.Errorf("HasLog does not match the log keys")
	}
}

// signed returns a checkpoint of origin signed by signers.
func signed(t testing.TB, origin string, size uint64, root []byte, signers ...note.Signer) []byte {
	t.Helper()
	cp := fmt.Sprintf("%s\n%d\n%s\n", origin, size, b64(root))
	n, err := note.Sign(&note.Note{Text: cp}, signers...)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPolicySatisfied(t *testing.T) {
	k := newTestKeys(t)
	_, otherW1 := newWitnessKey(t, "w1.example") // same name, another key
	root := make([]byte, 32)
	cp := func(signers ...note.Signer) []byte {
		return signed(t, "example.com/log1", 5, root, append([]note.Signer{k.log1Signer}, signers...)...)
	}
	ws := fmt.Sprintf("log %s\nwitness w1 %s\nwitness w2 %s\nwitness w3 %s\n", k.log1, k.w1, k.w2, k.w3)
	tests := []struct {
		name   string
		policy string
		cp     []byte
		want   bool
	}{
		{"quorum none, no cosignature", "log " + k.log1 + "\nquorum none\n", cp(), true},
		{"one witness, cosigned", ws + "quorum w1\n", cp(k.s1), true},
		{"one witness, another's cosignature", ws + "quorum w1\n", cp(k.s2), false},
		{"one witness, no cosignature", ws + "quorum w1\n", cp(), false},
		{"2 of 3, two", ws + "group g 2 w1 w2 w3\nquorum g\n", cp(k.s1, k.s3), true},
		{"2 of 3, one", ws + "group g 2 w1 w2 w3\nquorum g\n", cp(k.s2), false},
		{"2 of 3, one signing twice", ws + "group g 2 w1 w2 w3\nquorum g\n", cp(k.s2, k.s2), false},
		{"all, all", ws + "group g all w1 w2 w3\nquorum g\n", cp(k.s1, k.s2, k.s3), true},
		{"all, two", ws + "group g all w1 w2 w3\nquorum g\n", cp(k.s1, k.s2), false},
		{"any, one", ws + "group g any w1 w2 w3\nquorum g\n", cp(k.s3), true},
		{"nested, met", ws + "group a any w1 w2\ngroup b all a w3\nquorum b\n", cp(k.s2, k.s3), true},
		{"nested, inner group unmet", ws + "group a any w1 w2\ngroup b all a w3\nquorum b\n", cp(k.s3), false},
		{"witness listed under a key it does not sign with", "witness w1 " + otherW1 + "\nquorum w1\n", cp(k.s1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParsePolicy([]byte(tt.policy))
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Satisfied(tt.cp); got != tt.want {
				t.Errorf("Satisfied(%q) = %v, want %v", tt.cp, got, tt.want)
			}
		})
	}
}

func TestPolicyVerifyCheckpoint(t *testing.T) {
	k := newTestKeys(t)
	p, err := ParsePolicy([]byte(fmt.Sprintf("log %s\nwitness w1 %s\nquorum w1\n", k.log1, k.w1)))
	if err != nil {
		t.Fatal(err)
	}
	root := make([]byte, 32)
	tests := []struct {
		name string
		cp   []byte
		want error
	}{
		{"signed and cosigned", signed(t, "example.com/log1", 3, root, k.log1Signer, k.s1), nil},
		{"not cosigned", signed(t, "example.com/log1", 3, root, k.log1Signer), ErrWitnessQuorum},
		{"another log", signed(t, "example.com/log2", 3, root, k.log2Signer, k.s1), ErrCheckpointSig},
		{"origin is not the key name", signed(t, "example.com/other", 3, root, k.log1Signer, k.s1), ErrCheckpointSig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.VerifyCheckpoint(tt.cp)
			if !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Errorf("VerifyCheckpoint = %v, want %v", err, tt.want)
			}
		})
	}
}

// FuzzParsePolicy: ParsePolicy never panics, and what it accepts keeps the
// rules: one quorum naming something defined, 1 <= k <= n, members defined.
func FuzzParsePolicy(f *testing.F) {
	k := newTestKeys(f)
	f.Add([]byte("quorum none\n"))
	f.Add([]byte(fmt.Sprintf("log %s https://log.example/\nwitness w1 %s\nwitness w2 %s\ngroup g 2 w1 w2\nquorum g\n", k.log1, k.w1, k.w2)))
	f.Add([]byte(fmt.Sprintf("# c\n\twitness w1 %s\ngroup g any w1\ngroup h all g\nquorum h\n", k.w1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePolicy(data)
		if err != nil {
			return
		}
		known := map[string]bool{NoQuorum: true}
		for _, w := range p.Witnesses {
			known[w.Name] = true
		}
		for _, g := range p.Groups {
			if g.K < 1 || g.K > len(g.Members) {
				t.Errorf("group %s: k = %d of %d members", g.Name, g.K, len(g.Members))
			}
			for _, m := range g.Members {
				if !known[m] || m == NoQuorum {
					t.Errorf("group %s: member %q not defined before it", g.Name, m)
				}
			}
			known[g.Name] = true
		}
		if !known[p.Quorum] {
			t.Errorf("quorum %q is not defined", p.Quorum)
		}
	})
}

// TestFuzzSeeds checks that the seed corpus in testdata/fuzz exists, so
// that plain go test runs it.
func TestFuzzSeeds(t *testing.T) {
	for _, name := range []string{"FuzzParsePolicy", "FuzzVerify"} {
		entries, err := os.ReadDir(filepath.Join("testdata", "fuzz", name))
		if err != nil || len(entries) == 0 {
			t.Errorf("no seeds in testdata/fuzz/%s: %v", name, err)
		}
	}
}
