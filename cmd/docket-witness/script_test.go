package main

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"
)

// TestScript runs the testdata/script/*.txtar scenarios against the binary
// built by TestMain, on a free loopback port ($ADDR).
func TestScript(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(binary)+string(os.PathListSeparator)+env.Getenv("PATH"))
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			env.Setenv("ADDR", ln.Addr().String())
			return ln.Close()
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"genkey":  cmdGenkey,
			"waitfor": cmdWaitfor,
			"addcp":   cmdAddcp,
		},
	})
}

// genkey NAME SKEYFILE [POLICYFILE]: writes a new signed-note private key
// (mode 0600) and, with POLICYFILE, appends a "log <vkey>" line to it.
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

// waitfor URL: waits until GET URL answers 200, for at most 10 seconds.
func cmdWaitfor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfor URL")
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(args[0]); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	ts.Fatalf("%s did not answer 200", args[0])
}

// addcp URL SKEYFILE OLD SIZE: posts to URL/add-checkpoint the checkpoint of
// size SIZE, signed with the log key in SKEYFILE, with the consistency proof
// from OLD, over a tree whose leaf i is "leaf i". Prints the status code and
// the response body.
func cmdAddcp(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: addcp URL SKEYFILE OLD SIZE")
	}
	skey, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	signer, err := note.NewSigner(strings.TrimSpace(string(skey)))
	ts.Check(err)
	old, err := strconv.ParseUint(args[2], 10, 64)
	ts.Check(err)
	size, err := strconv.ParseUint(args[3], 10, 64)
	ts.Check(err)

	tree := testonly.New(rfc6962.DefaultHasher)
	for i := range max(old, size) {
		tree.AppendData(fmt.Appendf(nil, "leaf %d", i))
	}
	text := fmt.Sprintf("%s\n%d\n%s\n", signer.Name(), size, base64.StdEncoding.EncodeToString(tree.HashAt(size)))
	cp, err := note.Sign(&note.Note{Text: text}, signer)
	ts.Check(err)
	var body bytes.Buffer
	fmt.Fprintf(&body, "old %d\n", old)
	if old > 0 && old <= size {
		proof, err := tree.ConsistencyProof(old, size)
		ts.Check(err)
		for _, h := range proof {
			fmt.Fprintf(&body, "%s\n", base64.StdEncoding.EncodeToString(h))
		}
	}
	fmt.Fprintf(&body, "\n%s", cp)

	resp, err := http.Post(args[0]+"/add-checkpoint", "text/plain", &body)
	ts.Check(err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ts.Check(err)
	fmt.Fprintf(ts.Stdout(), "%d\n%s", resp.StatusCode, b)
}
