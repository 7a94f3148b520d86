package logclient_test

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/logclient"
)

// TestFailFast: a log that refuses connections fails an Add at once with
// FailFast (the strict mode, background syncs), and is retried until the
// context ends without it.
func TestFailFast(t *testing.T) {
	// A loopback address nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	f := newFakeLog()
	v, err := c2sp.NewProofVerifier(f.log.VKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		failFast  bool
		wantEnded bool // the context ended before Add returned
	}{
		{name: "fail fast", failFast: true},
		{name: "retried", failFast: false, wantEnded: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := logclient.NewHTTPOps(url, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			c, err := logclient.New(ops, logclient.Config{Verifier: v, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, FailFast: tc.failFast})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			if tc.wantEnded {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
			}
			_, err = c.Add(ctx, []byte("entry"))
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("Add to a closed port = %v, want connection refused", err)
			}
			if ended := ctx.Err() != nil; ended != tc.wantEnded {
				t.Errorf("Add returned with the context ended = %v, want %v", ended, tc.wantEnded)
			}
		})
	}
}
