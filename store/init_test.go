package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docketlog/docket/receipts"
)

// TestInit: the project setup of docket init keeps what is there and
// refuses what it must not use.
func TestInit(t *testing.T) {
	s := Open(t.TempDir())
	kid, created, err := s.InitKey()
	if err != nil || !created || !strings.HasPrefix(kid, "sb:issuer:") {
		t.Fatalf("InitKey() = %q, %v, %v, want a new key", kid, created, err)
	}
	again, created, err := s.InitKey()
	if err != nil || created || again != kid {
		t.Errorf("InitKey() again = %q, %v, %v, want %q kept", again, created, err, kid)
	}
	os.Chmod(s.KeyPath(), 0o644)
	if _, _, err := s.InitKey(); err == nil {
		t.Errorf("InitKey() over a key others can read = nil error, want one")
	}

	if s.HasPolicy() {
		t.Errorf("HasPolicy() = true before any policy")
	}
	path, err := s.WritePolicyFile("docket.cedar", []byte("x"))
	if err != nil || path != filepath.Join(s.PolicyDir(), "docket.cedar") || !s.HasPolicy() {
		t.Errorf("WritePolicyFile = %q, %v; HasPolicy() = %v", path, err, s.HasPolicy())
	}
	for _, name := range []string{"../x.cedar", ".hidden", "a/b", ""} {
		if _, err := s.WritePolicyFile(name, nil); err == nil {
			t.Errorf("WritePolicyFile(%q) = nil error, want one", name)
		}
		if _, err := s.ReadPolicyFile(name); err == nil {
			t.Errorf("ReadPolicyFile(%q) = nil error, want one", name)
		}
	}
	files, err := s.PolicyFiles()
	if err != nil || len(files) != 1 || files[0].Name != "docket.cedar" || string(files[0].Data) != "x" {
		t.Errorf("PolicyFiles() = %+v, %v", files, err)
	}

	os.WriteFile(filepath.Join(s.Project(), ".gitignore"), []byte("node_modules\n/.docket/spool/"), 0o644)
	add, err := s.InitGitignore()
	if want := slices.DeleteFunc(slices.Clone(GitignoreLines), func(l string) bool { return l == "/.docket/spool/" }); err != nil || !slices.Equal(add, want) {
		t.Errorf("InitGitignore() = %q, %v, want %q", add, err, want)
	}
	if add, err := s.InitGitignore(); err != nil || add != nil {
		t.Errorf("InitGitignore() again = %q, %v, want nothing", add, err)
	}
}

// TestInitConfig: a witness policy inside the project is kept relative to
// it, one outside absolute, and a missing one refused.
func TestInitConfig(t *testing.T) {
	project, outside := t.TempDir(), t.TempDir()
	s := Open(project)
	vkey := newTestLog(t).log.VKey
	for _, dir := range []string{project, outside} {
		os.WriteFile(filepath.Join(dir, "w.policy"), []byte("quorum none\n"), 0o644)
	}
	tests := []struct {
		name, policy, want string
	}{
		{"inside", filepath.Join(project, "w.policy"), "w.policy"},
		{"outside", filepath.Join(outside, "w.policy"), filepath.Join(outside, "w.policy")},
		{"missing", filepath.Join(project, "nope.policy"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.InitConfig(Config{LogURL: "https://log.example", LogKey: vkey, WitnessPolicy: tt.policy})
			if tt.want == "" {
				if err == nil {
					t.Errorf("InitConfig(%s) = nil error, want one", tt.policy)
				}
				return
			}
			c, cerr := s.Config()
			if err != nil || cerr != nil || c.WitnessPolicy != tt.want {
				t.Fatalf("InitConfig(%s): config %+v, %v, %v, want witness_policy %q", tt.policy, c, err, cerr, tt.want)
			}
			if b, err := s.WitnessPolicy(c); err != nil || string(b) != "quorum none\n" {
				t.Errorf("WitnessPolicy() = %q, %v", b, err)
			}
		})
	}
}

// TestChainOf: a chain file is a store's when it lies where ChainPath puts
// it, and only then.
func TestChainOf(t *testing.T) {
	s := Open(t.TempDir())
	key, _ := receipts.GenerateKey()
	appendN(t, s, key, "s1", 2)
	st, session, ok := ChainOf(s.ChainPath("s1"))
	if !ok || session != "s1" || st.dir != s.dir {
		t.Fatalf("ChainOf(%s) = %v, %q, %v", s.ChainPath("s1"), st, session, ok)
	}
	if rs, err := st.Receipts(session); err != nil || len(rs) != 2 {
		t.Errorf("ChainOf's store Receipts = %d, %v, want 2", len(rs), err)
	}
	for _, p := range []string{"chain.jsonl", "/tmp/x/s1.jsonl", filepath.Join(s.dir, SessionsDir, "s1.json"), filepath.Join(s.dir, SessionsDir, ".hidden.jsonl")} {
		if _, _, ok := ChainOf(p); ok {
			t.Errorf("ChainOf(%s) = ok, want not a store's chain", p)
		}
	}
}

// TestCopySession: the copy of a session is its chain's complete lines,
// byte for byte, and the copy's proofs read back as the store's.
func TestCopySession(t *testing.T) {
	s, to := Open(t.TempDir()), OpenDir(filepath.Join(t.TempDir(), "copy"))
	key, _ := receipts.GenerateKey()
	appendN(t, s, key, "s1", 3)
	tl := newTestLog(t)
	us, _, err := s.Pending(Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	putProofs(t, s, tl, key, us)
	// An append in progress: an incomplete last line is not copied.
	f, _ := os.OpenFile(s.ChainPath("s1"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"payload":`)
	f.Close()
	n, err := s.CopySession("s1", to)
	if err != nil || n != 3 {
		t.Fatalf("CopySession = %d, %v, want 3 proofs", n, err)
	}
	want, _ := s.Receipts("s1")
	got, err := to.Receipts("s1")
	if err != nil || len(got) != 3 || string(got[2]) != string(want[2]) {
		t.Errorf("copy Receipts = %d, %v, want the store's 3", len(got), err)
	}
	ps, err := to.Proofs("s1")
	if err != nil || ps.Len() != 3 {
		t.Fatalf("copy Proofs = %v, %v, want 3", ps, err)
	}
	for seq := int64(1); seq <= 3; seq++ {
		a, _ := ps.Get(seq)
		b, _ := s.ReadProof("s1", seq)
		if string(a) != string(b) {
			t.Errorf("copy proof %d differs from the store's", seq)
		}
	}
}
