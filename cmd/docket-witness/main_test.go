package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/cli/clitest"
	"github.com/docketlog/docket/internal/tlogtest"
)

// binary is the docket-witness command: this test binary, which answers as
// docket-witness when started under that name from the $PATH that
// clitest.Main sets up (internal/cli/clitest).
const binary = "docket-witness"

func TestMain(m *testing.M) { clitest.Main(m) }

// testLog is a log with a real Merkle tree and a real Ed25519 key.
type testLog struct{ *tlogtest.Log }

func newTestLog(t *testing.T, origin string) *testLog {
	t.Helper()
	return &testLog{tlogtest.New(origin)}
}

// request returns an add-checkpoint body from old to size and the checkpoint.
func (l *testLog) request(t *testing.T, old, size uint64) (body, checkpoint []byte) {
	t.Helper()
	return l.AddCheckpoint(old, size)
}

// server is a running docket-witness process.
type server struct {
	cmd    *exec.Cmd
	url    string
	vkey   string
	stderr chan string // lines
}

func start(t *testing.T, args ...string) *server {
	t.Helper()
	cmd := exec.Command(binary, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, stderr: make(chan string, 1000)}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Logf("docket-witness: %s", sc.Text())
			select {
			case s.stderr <- sc.Text():
			default:
			}
		}
		close(s.stderr)
	}()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		switch k {
		case "vkey":
			s.vkey = v
		case "listen":
			s.url = "http://" + v
		}
		if s.url != "" {
			break
		}
	}
	if s.vkey == "" || s.url == "" {
		cmd.Wait()
		t.Fatalf("docket-witness %v: no vkey and listen lines on stdout (exit %v)", args, cmd.ProcessState)
	}
	go io.Copy(io.Discard, stdout)
	return s
}

// stop sends SIGTERM and returns the exit code.
func (s *server) stop(t *testing.T) int {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	s.cmd.Wait()
	return s.cmd.ProcessState.ExitCode()
}

// waitLog waits for a stderr line containing substr.
func (s *server) waitLog(t *testing.T, substr string) {
	t.Helper()
	for line := range s.stderr {
		if strings.Contains(line, substr) {
			return
		}
	}
	t.Fatalf("docket-witness exited without logging %q", substr)
}

func (s *server) post(t *testing.T, body []byte) (int, string) {
	t.Helper()
	resp, err := http.Post(s.url+"/add-checkpoint", "text/plain", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (s *server) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// setup writes a witness key, a log list with l and returns the flags.
func setup(t *testing.T, logs ...*testLog) (args []string, witnessVKey, logsFile string) {
	t.Helper()
	dir := t.TempDir()
	skey, vkey, err := note.GenerateKey(rand.Reader, "witness.example/w1")
	if err != nil {
		t.Fatal(err)
	}
	witnessVKey, err = fnote.VKeyToCosignatureV1(vkey)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "witness.key")
	writeFile(t, keyFile, skey+"\n", 0o600)
	logsFile = filepath.Join(dir, "logs.policy")
	var policy strings.Builder
	policy.WriteString("quorum none\n")
	for _, l := range logs {
		fmt.Fprintf(&policy, "log %s https://%s/\n", l.VKey, l.Origin)
	}
	writeFile(t, logsFile, policy.String(), 0o644)
	return []string{"-listen", "127.0.0.1:0", "-key", keyFile, "-db", filepath.Join(dir, "witness.db"), "-logs", logsFile}, witnessVKey, logsFile
}

func verifyCosignature(t *testing.T, vkey string, checkpoint []byte, cosig string) {
	t.Helper()
	v, err := fnote.NewVerifierForCosignatureV1(vkey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(append(bytes.Clone(checkpoint), cosig...), note.VerifierList(v))
	if err != nil || len(n.Sigs) != 1 {
		t.Fatalf("note.Open(checkpoint + %q) = %v, want one valid cosignature", cosig, err)
	}
}

func TestEndToEnd(t *testing.T) {
	l := newTestLog(t, "example.com/e2e")
	args, wantVKey, logsFile := setup(t, l)

	s := start(t, args...)
	if s.vkey != wantVKey {
		t.Fatalf("vkey = %q, want %q (formats/note.VKeyToCosignatureV1 of the key's vkey)", s.vkey, wantVKey)
	}
	body, cp := l.request(t, 0, 5)
	status, cosig := s.post(t, body)
	if status != http.StatusOK {
		t.Fatalf("Add(old 0, size 5) = %d %q, want 200", status, cosig)
	}
	verifyCosignature(t, s.vkey, cp, cosig)
	body, cp = l.request(t, 5, 9)
	if status, cosig = s.post(t, body); status != http.StatusOK {
		t.Fatalf("Add(old 5, size 9) = %d %q, want 200", status, cosig)
	}
	verifyCosignature(t, s.vkey, cp, cosig)
	if status, _ := s.get(t, "/health"); status != http.StatusOK {
		t.Errorf("GET /health = %d, want 200", status)
	}
	if code := s.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}

	// Restart: the state is kept.
	s = start(t, args...)
	if status, body := s.get(t, "/"+c2sp.LogID(l.Origin)+"/checkpoint"); status != http.StatusOK || !strings.Contains(body, "\n9\n") {
		t.Fatalf("GET checkpoint after restart = %d %q, want 200 with size 9", status, body)
	}
	body, _ = l.request(t, 5, 12)
	if status, got := s.post(t, body); status != http.StatusConflict || got != "9\n" {
		t.Fatalf("Add(old 5) after restart = %d %q, want 409 \"9\\n\"", status, got)
	}
	body, cp = l.request(t, 9, 12)
	if status, cosig = s.post(t, body); status != http.StatusOK {
		t.Fatalf("Add(old 9, size 12) after restart = %d %q, want 200", status, cosig)
	}
	verifyCosignature(t, s.vkey, cp, cosig)

	// A fork is refused and kept as evidence.
	fork := newTestLog(t, l.Origin)
	fork.Signer = l.Signer
	fork.Tree.AppendData([]byte("something else"))
	body, _ = fork.request(t, 12, 12)
	if status, got := s.post(t, body); status != http.StatusUnprocessableEntity {
		t.Fatalf("Add(fork) = %d %q, want 422", status, got)
	}
	if status, got := s.get(t, "/evidence"); status != http.StatusOK || !strings.Contains(got, `"kind":"fork"`) {
		t.Errorf("GET /evidence = %d %q, want the fork", status, got)
	}

	// The log list is reloaded on SIGHUP.
	l2 := newTestLog(t, "example.com/second")
	body, _ = l2.request(t, 0, 3)
	if status, _ := s.post(t, body); status != http.StatusNotFound {
		t.Fatalf("Add(unlisted log) = %d, want 404", status)
	}
	writeFile(t, logsFile, fmt.Sprintf("log %s\nlog %s\nquorum none\n", l.VKey, l2.VKey), 0o644)
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, "reloaded log list")
	if status, got := s.post(t, body); status != http.StatusOK {
		t.Fatalf("Add(listed log) after SIGHUP = %d %q, want 200", status, got)
	}
	if code := s.stop(t); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
}

func TestConfigErrors(t *testing.T) {
	l := newTestLog(t, "example.com/cfg")
	args, _, _ := setup(t, l)
	keyFile, dbFile, logsFile := args[3], args[5], args[7]
	dir := t.TempDir()
	readable := filepath.Join(dir, "readable.key")
	key, _ := os.ReadFile(keyFile)
	writeFile(t, readable, string(key), 0o644)
	badLogs := filepath.Join(dir, "bad.policy")
	writeFile(t, badLogs, "log not-a-key\n", 0o644)
	notKey := filepath.Join(dir, "vkey.key")
	writeFile(t, notKey, l.VKey+"\n", 0o600)

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"help", []string{"-h"}, 0, ""},
		{"no flags", nil, 2, "-key, -db and -logs are required"},
		{"unknown flag", []string{"-nope"}, 2, "flag provided but not defined"},
		{"extra argument", append(args[2:], "extra"), 2, "unexpected argument"},
		{"group-readable key", []string{"-key", readable, "-db", dbFile, "-logs", logsFile}, 2, "must not be readable by group or others"},
		{"missing key", []string{"-key", filepath.Join(dir, "none"), "-db", dbFile, "-logs", logsFile}, 2, "reading key"},
		{"not a private key", []string{"-key", notKey, "-db", dbFile, "-logs", logsFile}, 2, "malformed"},
		{"bad log list", []string{"-key", keyFile, "-db", dbFile, "-logs", badLogs}, 2, "log list"},
		{"negative rate", []string{"-key", keyFile, "-db", dbFile, "-logs", logsFile, "-rate", "-1"}, 2, "-rate"},
		{"bad listen address", []string{"-listen", "256.0.0.1:bad", "-key", keyFile, "-db", dbFile, "-logs", logsFile}, 1, "docket-witness: error:"},
		{"bad database", []string{"-key", keyFile, "-db", dir, "-logs", logsFile}, 1, "docket-witness: error:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(binary, tt.args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != tt.wantCode {
				t.Errorf("docket-witness %v exit code = %d, want %d; stderr:\n%s", tt.args, code, tt.wantCode, stderr.String())
			}
			if tt.wantErr == "" {
				return
			}
			if !strings.Contains(stderr.String(), "docket-witness: error: ") || !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("docket-witness %v stderr = %q, want an error containing %q", tt.args, stderr.String(), tt.wantErr)
			}
		})
	}
}

// TestSpecRefusals: through the binary, a size-0 checkpoint whose root is
// not the empty tree's and a non-empty proof from old 0 get 422 and leave
// nothing behind (issue 10 §2); the log's real empty checkpoint is cosigned
// afterwards.
func TestSpecRefusals(t *testing.T) {
	l := newTestLog(t, "example.com/refusals")
	args, _, _ := setup(t, l)
	s := start(t, args...)
	zeroRoot := tlogtest.SignCheckpoint(l.Origin, 0, make([]byte, 32), l.Signer)
	if status, body := s.post(t, append([]byte("old 0\n\n"), zeroRoot...)); status != http.StatusUnprocessableEntity {
		t.Errorf("Add(size 0, zero root) = %d %q, want 422", status, body)
	}
	_, cp3 := l.request(t, 0, 3)
	proofFromZero := append([]byte("old 0\nPlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=\n\n"), cp3...)
	if status, body := s.post(t, proofFromZero); status != http.StatusUnprocessableEntity {
		t.Errorf("Add(old 0, a proof line) = %d %q, want 422", status, body)
	}
	if status, body := s.get(t, "/"+c2sp.LogID(l.Origin)+"/checkpoint"); status != http.StatusNotFound {
		t.Errorf("GET checkpoint after the refusals = %d %q, want 404: nothing stored", status, body)
	}
	if _, body := s.get(t, "/evidence"); strings.TrimSpace(body) != "[]" {
		t.Errorf("GET /evidence = %q, want []", body)
	}
	body, cp0 := l.request(t, 0, 0)
	status, cosig := s.post(t, body)
	if status != http.StatusOK {
		t.Fatalf("Add(the empty tree) = %d %q, want 200", status, cosig)
	}
	verifyCosignature(t, s.vkey, cp0, cosig)
}

// TestKilled checks that what was acknowledged survives SIGKILL: the state is
// committed before the answer.
func TestKilled(t *testing.T) {
	l := newTestLog(t, "example.com/killed")
	args, _, _ := setup(t, l)
	s := start(t, append(args, "-rate", "0")...)
	var old uint64
	for size := uint64(1); size <= 50; size++ {
		body, _ := l.request(t, old, size)
		if status, got := s.post(t, body); status != http.StatusOK {
			t.Fatalf("Add(old %d, size %d) = %d %q, want 200", old, size, status, got)
		}
		old = size
	}
	s.cmd.Process.Kill()
	s.cmd.Wait()

	s = start(t, args...)
	body, _ := l.request(t, 49, 60)
	if status, got := s.post(t, body); status != http.StatusConflict || got != "50\n" {
		t.Fatalf("Add(old 49) after SIGKILL = %d %q, want 409 \"50\\n\"", status, got)
	}
	body, _ = l.request(t, 50, 60)
	if status, got := s.post(t, body); status != http.StatusOK {
		t.Fatalf("Add(old 50) after SIGKILL = %d %q, want 200", status, got)
	}
}

// TestOversizeContentLength: through the binary, an add-checkpoint whose
// Content-Length claims 10 GB is answered 413 at once, without the witness
// reading the body (the client sends none) or waiting for its read
// timeout; then the witness still cosigns.
func TestOversizeContentLength(t *testing.T) {
	l := newTestLog(t, "example.com/oversize")
	args, _, _ := setup(t, l)
	s := start(t, args...)
	c, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// A guard against a hanging test, not an assertion about time: the
	// witness's read timeout (30s) would answer otherwise, and not 413.
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	io.WriteString(c, "POST /add-checkpoint HTTP/1.1\r\nHost: w\r\nContent-Length: 10000000000\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("POST /add-checkpoint with Content-Length 10 GB and no body: %v, want 413", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("POST /add-checkpoint with Content-Length 10 GB and no body = %d, want 413", resp.StatusCode)
	}
	body, cp := l.request(t, 0, 4)
	status, cosig := s.post(t, body)
	if status != http.StatusOK {
		t.Fatalf("Add(old 0, size 4) = %d %q, want 200", status, cosig)
	}
	verifyCosignature(t, s.vkey, cp, cosig)
}
