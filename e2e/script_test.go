// Package e2e runs Docket's commands end to end: testscript scenarios in
// ../testdata/script/*.txtar drive docket, docket-log and docket-witness as
// real processes on loopback ports. The processes are this test binary
// answering as each command (internal/cli/clitest), so nothing is built.
package e2e

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/docketlog/docket/confine"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	f_log "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/internal/cli/clitest"
	"github.com/docketlog/docket/internal/tlogtest"
)

func TestMain(m *testing.M) { clitest.Main(m) }

func TestScripts(t *testing.T) {
	vectors, err := filepath.Abs("../testdata/vectors")
	if err != nil {
		t.Fatal(err)
	}
	hookdata, err := filepath.Abs("../testdata/hook")
	if err != nil {
		t.Fatal(err)
	}
	// The docket the scenarios run, as docket init writes it into hooks.
	docket, err := exec.LookPath("docket")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "../testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("VECTORS", vectors)
			env.Setenv("HOOKDATA", hookdata)
			env.Setenv("DOCKET", docket)
			env.Setenv("CLIBIN", filepath.Dir(docket)) // docket, docket-log, docket-witness
			env.Setenv("GORACE", os.Getenv("GORACE"))  // set by clitest.Main
			// Free loopback ports for the servers a scenario starts.
			for _, name := range []string{"LOG_PORT", "W1_PORT", "W2_PORT", "W3_PORT"} {
				port, err := freePort()
				if err != nil {
					return err
				}
				env.Setenv(name, strconv.Itoa(port))
			}
			env.Setenv("ADDR", "127.0.0.1:"+env.Getenv("W1_PORT"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfor":    cmdWaitfor,
			"exits":      cmdExits,
			"genkey":     cmdGenkey,
			"addcp":      cmdAddcp,
			"perm":       cmdPerm,
			"checkpoint": cmdCheckpoint,
			"httpget":    cmdHTTPGet,
			"waitsync":   cmdWaitsync,
			"genlog":     cmdGenlog,
		},
		Condition: func(cond string) (bool, error) {
			if cond == "short" {
				return testing.Short(), nil
			}
			if cond == "confines" { // this kernel can apply a confinement (package confine)
				return confine.Support().Mechanism != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// cmdWaitfor waits until a server answers HTTP at URL: `waitfor URL`.
// It gives up after 60 seconds, which only a broken server reaches.
func cmdWaitfor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfor URL")
	}
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get(args[0])
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfor %s: %v", args[0], err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cmdHTTPGet fetches URL into stdout: `httpget [-until TEXT] URL`. It
// expects 200, or with -until asks again until the body holds TEXT (a
// server catching up), giving up after 60 seconds.
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	until := ""
	if len(args) == 3 && args[0] == "-until" {
		until, args = args[1], args[2:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: httpget [-until TEXT] URL")
	}
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := client.Get(args[0])
		var body []byte
		status := 0
		if err == nil {
			status = resp.StatusCode
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		ok := err == nil && status == http.StatusOK && strings.Contains(string(body), until)
		if ok || (until == "" && err == nil) || time.Now().After(deadline) {
			if neg == ok {
				ts.Fatalf("httpget %s: %v, status %d:\n%s", args[0], err, status, body)
			}
			ts.Stdout().Write(body)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cmdWaitsync waits until the project's sync log holds N runs, the hooks'
// background syncs among them: `waitsync PROJECT N`. It gives up after 60
// seconds, which only a sync that never ends reaches.
func cmdWaitsync(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitsync PROJECT N")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("waitsync: bad count %q", args[1])
	}
	path := filepath.Join(ts.MkAbs(args[0]), ".docket", "sync.log")
	deadline := time.Now().Add(60 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if bytes.Count(data, []byte("\n")) >= n {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitsync: %s has %d runs, want %d", path, bytes.Count(data, []byte("\n")), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cmdExits runs a program and checks its exact exit status:
// `exits N prog args...`. Its stdout and stderr are kept for the stdout and
// stderr commands, as exec's are.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N prog [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad status %q", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		got = exit.ExitCode()
	case err != nil:
		ts.Fatalf("exits: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// cmdGenkey writes a new signed-note private key (mode 0600) and, with
// POLICYFILE, appends a "log <vkey>" line to it: `genkey NAME SKEYFILE [POLICYFILE]`.
func cmdGenkey(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: genkey NAME SKEYFILE [POLICYFILE]")
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, args[0])
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), []byte(skey+"\n"), 0o600))
	if len(args) == 3 {
		f, err := os.OpenFile(ts.MkAbs(args[2]), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		ts.Check(err)
		fmt.Fprintf(f, "log %s\n", vkey)
		ts.Check(f.Close())
	}
}

// cmdAddcp posts to URL/add-checkpoint the checkpoint of size SIZE, signed
// with the log key in SKEYFILE, with the consistency proof from OLD (a
// tlogtest.Log, rebuilt the same way by every call), and prints the status
// code and the body: `addcp URL SKEYFILE OLD SIZE`.
func cmdAddcp(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: addcp URL SKEYFILE OLD SIZE")
	}
	skey, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	l, err := tlogtest.FromKey(strings.TrimSpace(string(skey)))
	ts.Check(err)
	old, err := strconv.ParseUint(args[2], 10, 64)
	ts.Check(err)
	size, err := strconv.ParseUint(args[3], 10, 64)
	ts.Check(err)
	body, _ := l.AddCheckpoint(old, size)

	resp, err := http.Post(args[0]+"/add-checkpoint", "text/plain", bytes.NewReader(body))
	ts.Check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%d\n%s", resp.StatusCode, b)
}

// cmdPerm checks the permission bits of a file: `perm 0600 FILE`.
func cmdPerm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: perm MODE FILE")
	}
	want, err := strconv.ParseUint(args[0], 8, 32)
	ts.Check(err)
	fi, err := os.Stat(ts.MkAbs(args[1]))
	ts.Check(err)
	if got := fi.Mode().Perm(); got != os.FileMode(want) {
		ts.Fatalf("%s has mode %#o, want %#o", args[1], got, want)
	}
}

// cmdCheckpoint fetches URL/checkpoint, verifies it with the note verifier
// key in VKEYFILE, and prints its origin and size:
// `checkpoint URL VKEYFILE`.
func cmdCheckpoint(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: checkpoint URL VKEYFILE")
	}
	vkey, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	v, err := note.NewVerifier(strings.TrimSpace(string(vkey)))
	ts.Check(err)
	resp, err := http.Get(args[0] + "/checkpoint")
	ts.Check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	cp, _, _, err := f_log.ParseCheckpoint(b, v.Name(), v)
	if err != nil {
		ts.Fatalf("checkpoint of %s: %v", args[0], err)
	}
	fmt.Fprintf(ts.Stdout(), "%s size %d\n", cp.Origin, cp.Size)
}
