package log

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/log/posix"
	"github.com/docketlog/docket/receipts"
	"github.com/transparency-dev/tessera"
	"golang.org/x/mod/sumdb/note"
)

// pushbackDriver is a Tessera driver whose appender refuses every entry
// with Tessera's pushback, as the AWS driver does when too many entries
// are sequenced but not yet integrated. Its reader holds an empty log.
type pushbackDriver struct{}

func (pushbackDriver) Appender(context.Context, *tessera.AppendOptions) (*tessera.Appender, tessera.LogReader, error) {
	add := func(context.Context, *tessera.Entry) tessera.IndexFuture {
		return func() (tessera.Index, error) {
			return tessera.Index{}, fmt.Errorf("too many entries outstanding: %w", tessera.ErrPushbackIntegration)
		}
	}
	return &tessera.Appender{Add: add}, emptyReader{}, nil
}

type emptyReader struct{}

func (emptyReader) ReadCheckpoint(context.Context) ([]byte, error) { return nil, os.ErrNotExist }
func (emptyReader) ReadTile(context.Context, uint64, uint64, uint8) ([]byte, error) {
	return nil, os.ErrNotExist
}
func (emptyReader) ReadEntryBundle(context.Context, uint64, uint8) ([]byte, error) {
	return nil, os.ErrNotExist
}
func (emptyReader) IntegratedSize(context.Context) (uint64, error) { return 0, nil }
func (emptyReader) NextIndex(context.Context) (uint64, error)      { return 0, nil }

// TestPushbackIsOverloaded: a driver's pushback is ErrOverloaded (503
// with Retry-After), not an internal error.
func TestPushbackIsOverloaded(t *testing.T) {
	dir := t.TempDir()
	skey, vkey, err := c2sp.GenerateKey("example.com/test-log")
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := posix.OpenIndex(t.Context(), dir+"/dedup.sqlite")
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	l, err := New(t.Context(), Config{Driver: pushbackDriver{}, Index: idx, Signer: s, VKey: vkey})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	priv, _ := receipts.GenerateKey()
	_, err = l.Add(t.Context(), testEntry(t, priv, "s", 1))
	if !errors.Is(err, ErrOverloaded) || !errors.Is(err, tessera.ErrPushback) {
		t.Fatalf("Add(while the driver pushes back) = %v, want ErrOverloaded wrapping tessera.ErrPushback", err)
	}
	if status, code, retry := statusOf(err); status != 503 || code != codeOverloaded || retry == 0 {
		t.Errorf("statusOf(pushback) = %d %s retry %d, want 503 overloaded with Retry-After", status, code, retry)
	}
}
