package witness

import (
	"bytes"
	"testing"
)

func TestParseAddRequest(t *testing.T) {
	h := "PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw="
	tests := []struct {
		name      string
		body      string
		wantOld   uint64
		wantProof int
		wantErr   bool
	}{
		{"old 0", "old 0\n\ncp\n", 0, 0, false},
		{"proof", "old 5\n" + h + "\n" + h + "\n\ncp\n", 5, 2, false},
		{"max size", "old 9223372036854775807\n\ncp\n", 9223372036854775807, 0, false},
		{"size above int64", "old 9223372036854775808\n\ncp\n", 0, 0, true},
		{"leading zero", "old 05\n\ncp\n", 0, 0, true},
		{"plus sign", "old +5\n\ncp\n", 0, 0, true},
		{"no space", "old5\n\ncp\n", 0, 0, true},
		{"two spaces", "old  5\n\ncp\n", 0, 0, true},
		{"CRLF", "old 5\r\n\r\ncp\n", 0, 0, true},
		{"no empty line", "old 5\n" + h + "\n", 0, 0, true},
		{"no checkpoint", "old 5\n" + h + "\n\n", 0, 0, true},
		{"proof from 0 (422 later, not malformed)", "old 0\n" + h + "\n\ncp\n", 0, 1, false},
		{"short hash", "old 5\nAAAA\n\ncp\n", 0, 0, true},
		{"non-canonical base64", "old 5\nPlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkax=\n\ncp\n", 0, 0, true},
		{"hash with CR", "old 5\n" + h + "\r\n\ncp\n", 0, 0, true},
		{"63 lines", "old 5\n" + string(bytes.Repeat([]byte(h+"\n"), 63)) + "\ncp\n", 5, 63, false},
		{"64 lines", "old 5\n" + string(bytes.Repeat([]byte(h+"\n"), 64)) + "\ncp\n", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parseAddRequest([]byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseAddRequest(%q) error = %v, want error %v", tt.body, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if r.OldSize != tt.wantOld || len(r.Proof) != tt.wantProof {
				t.Errorf("parseAddRequest(%q) = old %d, %d proof lines, want old %d, %d", tt.body, r.OldSize, len(r.Proof), tt.wantOld, tt.wantProof)
			}
			if got := r.marshal(); string(got) != tt.body {
				t.Errorf("marshal(parseAddRequest(%q)) = %q, want the input", tt.body, got)
			}
		})
	}
}

func TestParseCheckpoint(t *testing.T) {
	h := "PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw="
	tests := []struct {
		name    string
		text    string
		wantErr bool
	}{
		{"plain", "example.com/log\n20\n" + h + "\n", false},
		{"extension", "example.com/log\n20\n" + h + "\next\n", false},
		{"empty origin", "\n20\n" + h + "\n", true},
		{"leading zero", "o\n020\n" + h + "\n", true},
		{"negative", "o\n-1\n" + h + "\n", true},
		{"short root", "o\n1\nAAAA\n", true},
		{"two lines", "o\n1\n", true},
		{"no final newline", "o\n1\n" + h, true},
		{"empty extension line", "o\n1\n" + h + "\n\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseCheckpoint([]byte(tt.text))
			if (err != nil) != tt.wantErr {
				t.Errorf("parseCheckpoint(%q) error = %v, want error %v", tt.text, err, tt.wantErr)
			}
		})
	}
}

// FuzzParseAddRequest checks that the add-checkpoint parser never panics,
// that what it accepts round-trips byte for byte, and that it enforces the
// proof bounds. Seeds are in testdata/fuzz/FuzzParseAddRequest.
func FuzzParseAddRequest(f *testing.F) {
	f.Add([]byte("old 0\n\nexample.com/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n\n— example.com/log AAAA\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseAddRequest(body)
		if err != nil {
			return
		}
		if got := r.marshal(); !bytes.Equal(got, body) {
			t.Fatalf("marshal(parseAddRequest(%q)) = %q, want the input", body, got)
		}
		if len(r.Proof) > maxProofLines || (r.OldSize == 0 && len(r.Proof) > 0) || len(r.Checkpoint) == 0 {
			t.Fatalf("parseAddRequest(%q) = %+v, out of bounds", body, r)
		}
		for _, h := range r.Proof {
			if len(h) != 32 {
				t.Fatalf("parseAddRequest(%q) proof hash of %d bytes", body, len(h))
			}
		}
	})
}

// FuzzParseCheckpoint checks that the checkpoint parser never panics and that
// what it accepts has a 32-byte root and a non-empty origin.
func FuzzParseCheckpoint(f *testing.F) {
	f.Add([]byte("example.com/log\n20\nPlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		c, err := parseCheckpoint(text)
		if err != nil {
			return
		}
		if len(c.Root) != 32 || c.Origin == "" || !bytes.HasPrefix(text, []byte(c.Origin+"\n")) {
			t.Fatalf("parseCheckpoint(%q) = %+v", text, c)
		}
	})
}
