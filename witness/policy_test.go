package witness

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

func TestParseLogs(t *testing.T) {
	_, logA, _ := note.GenerateKey(rand.Reader, "example.com/a")
	_, logB, _ := note.GenerateKey(rand.Reader, "example.com/b")
	_, wkey, _ := note.GenerateKey(rand.Reader, "witness.example/w")
	wkey, _ = fnote.VKeyToCosignatureV1(wkey)
	// The same public key under another name, with its own key ID.
	rawA, _ := base64.StdEncoding.DecodeString(strings.SplitN(logA, "+", 3)[2])
	renamed, err := note.NewEd25519VerifierKey("example.com/c", ed25519.PublicKey(rawA[1:]))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		policy  string
		want    []Log
		wantErr bool
	}{
		// tlog-policy: exactly one quorum line, and every line ends in a newline.
		{"empty", "", nil, true},
		{"log lines without a quorum line", "log " + logA + "\n", nil, true},
		{"quorum none only", "quorum none\n", nil, false},
		{"one log", "log " + logA + "\nquorum none\n", []Log{{VKey: logA}}, false},
		{"log with url", "log " + logA + " https://log.example/\nquorum none\n", []Log{{VKey: logA, URL: "https://log.example/"}}, false},
		{"no final newline", "log " + logA + " https://log.example/\nquorum none", nil, true},
		{"full policy", "# comment\n\tlog " + logA + "\n\nlog\t" + logB + "  \nwitness w1 " + wkey + "\nquorum w1\n",
			[]Log{{VKey: logA}, {VKey: logB}}, false},
		{"invalid verifier lines", "log " + logA + "\nwitness w1 " + wkey + "\ngroup g 2 w1 w1\nquorum g\n", nil, true},
		{"missing key", "log\nquorum none\n", nil, true},
		{"too many fields", "log " + logA + " url extra\nquorum none\n", nil, true},
		{"bad key", "log example.com/a+00000000+AAAA\nquorum none\n", nil, true},
		{"cosignature key as log key", "log " + wkey + "\nquorum none\n", nil, true},
		{"duplicate key", "log " + logA + "\nlog " + logA + "\nquorum none\n", nil, true},
		{"duplicate key under another name", "log " + logA + "\nlog " + renamed + "\nquorum none\n", nil, true},
		{"unknown keyword", "logs " + logA + "\nquorum none\n", nil, true},
		{"control character", "log " + logA + "\r\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLogs([]byte(tt.policy))
			if tt.name == "duplicate key under another name" && (err == nil || !strings.Contains(err.Error(), "duplicates")) {
				t.Errorf("ParseLogs(%q) = %v, want a duplicate key error", tt.policy, err)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseLogs(%q) error = %v, want error %v", tt.policy, err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseLogs(%q) = %v, want %v", tt.policy, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("ParseLogs(%q)[%d] = %v, want %v", tt.policy, i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestParseLogsPlusInKey checks keys whose base64 contains '+', which once
// made ParseLogs split the key in the wrong place and panic.
func TestParseLogsPlusInKey(t *testing.T) {
	n := 0
	for i := 0; n < 20 && i < 2000; i++ {
		_, vkey, err := note.GenerateKey(rand.Reader, "example.com/log")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.SplitN(vkey, "+", 3)[2], "+") {
			continue
		}
		n++
		logs, err := ParseLogs([]byte("log " + vkey + "\nquorum none\n"))
		if err != nil || len(logs) != 1 || logs[0].VKey != vkey {
			t.Fatalf("ParseLogs(%s) = %v, %v; want the one log", vkey, logs, err)
		}
	}
	if n == 0 {
		t.Fatal("no key with '+' in its base64 was generated")
	}
}
