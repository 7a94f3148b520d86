package logclient

import (
	"errors"
	"testing"
)

// FuzzBatchAnswer checks that the answer to a batch is read without a
// panic, and is either refused or one answer per entry, each a proof or a
// *StatusError with an HTTP status and a bounded Retry-After.
func FuzzBatchAnswer(f *testing.F) {
	f.Add([]byte(`[{"status":200,"index":1,"proof":"c2sp.org/tlog-proof@v1\n"}]`), 1)
	f.Add([]byte(`[{"status":503,"error":"overloaded","message":"busy","retry_after":1},{"status":200,"proof":"x"}]`), 2)
	f.Add([]byte(`[{"status":200}]`), 1)
	f.Add([]byte(`[{"status":422,"retry_after":-5}]`), 1)
	f.Add([]byte(`[{"status":429,"retry_after":99999999999999}]`), 1)
	f.Add([]byte(`c2sp.org/tlog-proof@v1`), 1)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		n = n%300 + 1
		if n < 1 {
			n = 1
		}
		answers, err := parseBatchAnswer(data, n)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("parseBatchAnswer(%q) = %v, want an ErrMalformed", data, err)
			}
			return
		}
		if len(answers) != n {
			t.Fatalf("parseBatchAnswer(%q, %d) = %d answers", data, n, len(answers))
		}
		for i, a := range answers {
			var se *StatusError
			switch {
			case a.Err == nil && len(a.Proof) == 0:
				t.Errorf("answer %d: neither a proof nor an error", i)
			case a.Err != nil && !errors.As(a.Err, &se):
				t.Errorf("answer %d: %v, want a *StatusError", i, a.Err)
			case se != nil && (se.Status < 100 || se.Status > 599 || se.Status == 200 || se.RetryAfter < 0 || se.RetryAfter > maxRetryAfter):
				t.Errorf("answer %d: %+v out of bounds", i, se)
			}
		}
	})
}
