package mcp

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SetServerMaxLine sets the length over which server messages are spooled
// to disk, for a test, and returns a function that restores it.
func SetServerMaxLine(n int) (restore func()) {
	old := serverMaxLine
	serverMaxLine = n
	return func() { serverMaxLine = old }
}

// SetListWait sets how long the relay waits for its own tools/list, for a
// test, and returns a function that restores it.
func SetListWait(d time.Duration) (restore func()) {
	old := listWait
	listWait = d
	return func() { listWait = old }
}

// ToolSchemaT is the inputSchema of the differential fuzz targets' tool
// "t" (see fuzzIn), as JSON.
func ToolSchemaT(tb testing.TB) []byte {
	b, _ := fuzzTools(tb).schemas["t"].raw.MarshalJSON()
	return b
}

// ReadCorpus returns the lines of a fuzz target's seed corpus.
func ReadCorpus(tb testing.TB, target string) [][]byte {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no corpus for %s: %v", target, err)
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(b), "\n")
		rest = strings.TrimSuffix(strings.TrimSpace(rest), ")")
		s, err := strconv.Unquote(strings.TrimPrefix(rest, "[]byte("))
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		out = append(out, []byte(s))
	}
	return out
}
