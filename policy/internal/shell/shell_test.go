package shell

import (
	"strings"
	"testing"
)

func TestAnalyze(t *testing.T) {
	tests := []struct {
		name  string
		cmd   string
		names string // program names in order
	}{
		{"pipeline", "a | b | c", "a,b,c"},
		{"wrappers", "sudo env X=1 timeout 5 nice -n 2 xargs -0 rm", "sudo,env,timeout,nice,xargs,rm"},
		{"bash -c", `bash -ec 'a; b'`, "bash,a,b"},
		{"find exec", `find . -exec grep x {} \; -exec wc {} +`, "find,grep,wc"},
		{"substitutions", "a $(b) `c` <(d) >(e)", "a,b,c,d,e"},
		{"unquoting", `r''m; "l"s; \c\a\t`, "rm,ls,cat"},
		{"path program", "/usr/bin/git status", "git"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh, err := Analyze(tt.cmd, "/home/u", "/p", "/p")
			if err != nil {
				t.Fatalf("Analyze(%q) error: %v", tt.cmd, err)
			}
			var got []string
			for _, c := range sh.Commands {
				got = append(got, c.Name)
			}
			if strings.Join(got, ",") != tt.names {
				t.Errorf("Analyze(%q) = %v, want %s", tt.cmd, got, tt.names)
			}
		})
	}
}

func BenchmarkAnalyze(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze("git status && go test ./... 2>&1 | tail -20 > test.log", "/h", "/p", "/p"); err != nil {
			b.Fatal(err)
		}
	}
}
