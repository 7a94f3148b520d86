package log_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/docketlog/docket/log"
)

// Example runs a log over a storage directory and serves its API.
func Example() {
	dir, _ := os.MkdirTemp("", "docket-log-example")
	defer os.RemoveAll(dir)
	keyFile := filepath.Join(dir, "log.key")
	if _, err := log.GenerateKeyFile(keyFile, "log.example.com/docket"); err != nil {
		panic(err)
	}
	signer, vkey, err := log.LoadSigner(keyFile)
	if err != nil {
		panic(err)
	}
	l, err := log.New(context.Background(), log.Config{
		StorageDir: filepath.Join(dir, "storage"),
		Signer:     signer,
		VKey:       vkey,
	})
	if err != nil {
		panic(err)
	}
	defer l.Close(context.Background())
	srv := &http.Server{Addr: "127.0.0.1:7780", Handler: l.Handler()}
	_ = srv // srv.ListenAndServe() in a real program
	fmt.Println(l.Origin())
	// Output: log.example.com/docket
}
