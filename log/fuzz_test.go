package log

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"testing"

	"github.com/docketlog/docket/receipts"
)

// FuzzAddUnsigned mutates the parts of an entry that no signature covers
// (members added outside the payload, the case and encoding of sig, kid
// and alg, whitespace, member order, number forms) and checks, against a
// real log on POSIX storage, that every mutation is refused or gets the
// original entry's index: one signed receipt is one log entry (issue 10 §1).
func FuzzAddUnsigned(f *testing.F) {
	l, _ := newTestLog(f, f.TempDir(), nil)
	f.Cleanup(func() { l.Close(context.Background()) })
	// A fixed key, so that the fuzzing workers, which each run this setup,
	// hold the same entry as the seeds.
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	orig := testEntry(f, priv, "s", 1)
	first, err := l.Add(f.Context(), orig)
	if err != nil {
		f.Fatal(err)
	}
	e, err := receipts.ParseEntry(orig)
	if err != nil {
		f.Fatal(err)
	}
	pk := hex.EncodeToString(e.PublicKey)
	sig := e.Receipt[bytes.Index(e.Receipt, []byte(`"sig":"`))+len(`"sig":"`):]
	sig = sig[:bytes.IndexByte(sig, '"')]
	rep := func(old, new string) []byte { return bytes.Replace(orig, []byte(old), []byte(new), 1) }
	for _, s := range [][]byte{
		orig,
		rep(`"signature":{`, `"signature":{"x":1,`),
		rep(`"signature":{`, `"signature":{"jwk":{"kty":"OKP","crv":"Ed25519","x":"`+pk+`"},`),
		rep(`"receipt":{`, `"receipt":{"x":1,`),
		rep(`{"public_key"`, `{"x":1,"public_key"`),
		rep(`"payload":{`, `"payload":{"x":1,`),
		rep(string(sig), string(bytes.ToUpper(sig))),
		rep(`"sig":"`, `"sig":"\u0030`),
		rep(`"alg":"EdDSA"`, `"alg":"eddsa"`),
		rep(`"alg":"EdDSA"`, `"alg":"Ed\u0044SA"`),
		rep(`"kid":"`, `"kid":" `),
		rep(`"sequence":1`, `"sequence":1.0`),
		rep(`"sequence":1`, `"sequence":1e0`),
		rep(`"sequence":1`, `"sequence":10e-1`),
		rep(`{"public_key"`, "{ \n\t\"public_key\" "),
		fmtReordered(e),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := l.Add(t.Context(), data)
		if err != nil {
			if !errors.Is(err, receipts.ErrMalformedEntry) && !errors.Is(err, receipts.ErrEntrySignature) &&
				!errors.Is(err, receipts.ErrEntryTooLarge) {
				t.Fatalf("Add(%q) = %v, want a refusal of the entry", data, err)
			}
			return
		}
		if r.Index != first.Index {
			t.Fatalf("Add(%q) = index %d, want the original entry's %d or a refusal", data, r.Index, first.Index)
		}
	})
}

// fmtReordered returns e with the entry's members in reverse order and
// the receipt's envelope members reordered, spaced out.
func fmtReordered(e *receipts.Entry) []byte {
	rec := e.Receipt
	p := bytes.Index(rec, []byte(`,"signature":`))
	payload, sig := rec[len(`{"payload":`):p], rec[p+len(`,"signature":`):len(rec)-1]
	return []byte(`{ "receipt" : { "signature" : ` + string(sig) + ` , "payload" : ` + string(payload) +
		` } , "public_key" : "` + hex.EncodeToString(e.PublicKey) + `" }`)
}

// FuzzJSONServerError checks that jsonServerError never fails on what a
// connection may write, and that what it makes of net/http's own error
// answers is an HTTP answer with the same status and a JSON error body.
func FuzzJSONServerError(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 400 Bad Request" + serverErrorHeaders + "400 Bad Request",
		"HTTP/1.1 431 Request Header Fields Too Large" + serverErrorHeaders + "431 Request Header Fields Too Large",
		"HTTP/1.1 501 Not Implemented" + serverErrorHeaders + "Unsupported transfer encoding",
		"HTTP/1.1 400 Bad Request: missing required Host header" + serverErrorHeaders + "400 Bad Request: missing required Host header",
		"HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nDate: x\r\n\r\nok",
		"HTTP/1.1 40",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		j, ok := jsonServerError(p)
		if !ok {
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(j)), nil)
		if err != nil {
			t.Fatalf("jsonServerError(%q) = %q, not an HTTP answer: %v", p, j, err)
		}
		var e struct{ Error, Message string }
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Error == "" {
			t.Fatalf("jsonServerError(%q) body: %v, want a JSON error", p, err)
		}
		if want := string(p[len("HTTP/1.1 ") : len("HTTP/1.1 ")+3]); strconv.Itoa(resp.StatusCode) != want {
			t.Errorf("jsonServerError(%q) status = %d, want %s", p, resp.StatusCode, want)
		}
	})
}
