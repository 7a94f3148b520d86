package log_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/log"
	"github.com/docketlog/docket/log/posix"
)

// Example runs a log over a storage directory and serves its API.
func Example() {
	dir, _ := os.MkdirTemp("", "docket-log-example")
	defer os.RemoveAll(dir)
	keyFile := filepath.Join(dir, "log.key")
	if _, err := c2sp.GenerateKeyFile(keyFile, "log.example.com/docket"); err != nil {
		panic(err)
	}
	signer, vkey, err := c2sp.LoadSigner(keyFile)
	if err != nil {
		panic(err)
	}
	st, err := posix.Open(context.Background(), filepath.Join(dir, "storage"), nil, nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	l, err := log.New(context.Background(), log.Config{
		Driver: st.Driver,
		Index:  st.Index,
		Signer: signer,
		VKey:   vkey,
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
