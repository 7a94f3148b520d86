package witness_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/witness"
	"golang.org/x/mod/sumdb/note"
)

func ExampleNew() {
	dir, _ := os.MkdirTemp("", "witness-example")
	defer os.RemoveAll(dir)

	// The witness key, as "docket keygen -witness" writes it, and the log list.
	skey, _, _ := note.GenerateKey(rand.Reader, "witness.example/w1")
	signer, vkey, err := c2sp.NewCosigner(skey)
	if err != nil {
		panic(err)
	}
	logSkey, logVkey, _ := note.GenerateKey(rand.Reader, "log.example/a")
	logs, err := witness.ParseLogs([]byte("log " + logVkey + " https://log.example/a/\nquorum none\n"))
	if err != nil {
		panic(err)
	}

	w, err := witness.New(witness.Config{
		Signer: signer,
		DBPath: filepath.Join(dir, "witness.db"),
		Logs:   logs,
	})
	if err != nil {
		panic(err)
	}
	defer w.Close()
	fmt.Println(strings.HasPrefix(vkey, "witness.example/w1+"))

	// The log submits its first checkpoint (old 0, so no proof).
	logSigner, _ := note.NewSigner(logSkey)
	cp, _ := note.Sign(&note.Note{Text: "log.example/a\n1\nbOcUgWA4pmWvVmLagI+7YlQwKoPoZcXy7ITJ2d4d07c=\n"}, logSigner)
	rec := httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest("POST", "/add-checkpoint", bytes.NewReader(append([]byte("old 0\n\n"), cp...))))
	fmt.Println(rec.Code, strings.HasPrefix(rec.Body.String(), "— witness.example/w1 "))

	// Submitting it again from an old size the witness does not have: 409.
	rec = httptest.NewRecorder()
	w.ServeHTTP(rec, httptest.NewRequest("POST", "/add-checkpoint", bytes.NewReader(append([]byte("old 0\n\n"), cp...))))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"), strings.TrimSpace(rec.Body.String()))

	// Output:
	// true
	// 200 true
	// 409 text/x.tlog.size 1
}
