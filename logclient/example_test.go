package logclient_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/logclient"
)

// Submitting entries to a log over HTTP: each proof is verified against the
// log's key before it is handed back.
func ExampleClient_Submit() {
	f := newFakeLog() // a log answering POST /add as docket-log does
	srv := httptest.NewServer(f)
	defer srv.Close()

	v, err := c2sp.LoadProofVerifier(f.log.VKey, "") // no witness policy
	if err != nil {
		fmt.Println(err)
		return
	}
	ops, err := logclient.NewHTTPOps(srv.URL, nil, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := logclient.New(ops, logclient.Config{Verifier: v, Concurrency: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	entries := [][]byte{[]byte(`{"entry":1}`), []byte(`{"entry":2}`)}
	c.Submit(context.Background(), entries, func(i int, p *logclient.Proof, err error) {
		if err != nil {
			fmt.Println(i, err)
			return
		}
		fmt.Printf("entry %d is at index %d of a tree of %d\n", i, p.Verified.Index, p.Verified.Size)
	})
	// Output:
	// entry 0 is at index 0 of a tree of 1
	// entry 1 is at index 1 of a tree of 2
}
