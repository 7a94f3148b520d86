package docketcmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/receipts"
)

const keygenUsage = `Usage:
    docket keygen [-o FILE]
    docket keygen -log ORIGIN [-o FILE]
    docket keygen -witness NAME [-o FILE]

Makes a new Ed25519 key.

With no mode flag, an issuer key for signing receipts: the key file
{"privateKey","publicKey","kid"} goes to FILE (mode 0600) or stdout, and its
JWKS entry is printed on stdout for verifiers.

With -log or -witness, a signed-note key (golang.org/x/mod/sumdb/note): the
private key goes to FILE (mode 0600) or stdout, the verifier key to FILE.pub
and stdout. A witness's verifier key is its cosignature/v1 key, the one to put
in a tlog-policy "witness" line.

Options:
    -o FILE          write the private key to FILE (refuses to overwrite)
    -log ORIGIN      make a log key whose name is the log's origin
    -witness NAME    make a witness key

Examples:
    docket keygen -o issuer.key
    docket keygen -log log.example.com/docket -o log.key
    docket keygen -witness witness.example.org -o witness.key
`

func runKeygen(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("keygen", keygenUsage, stderr)
	out := fs.String("o", "", "")
	logName := fs.String("log", "", "")
	witnessName := fs.String("witness", "", "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2
	}
	if *logName != "" && *witnessName != "" {
		errorf(stderr, "keygen: give -log or -witness, not both")
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, mode := range []string{"log", "witness"} {
		if name := fs.Lookup(mode).Value.String(); set[mode] && !validKeyName(name) {
			errorf(stderr, "keygen: -%s %q: a key name is non-empty printable text without spaces or '+' (a log's origin, a witness's name)", mode, name)
			return 2
		}
	}
	if *logName != "" || *witnessName != "" {
		return noteKeygen(*logName, *witnessName, *out, stdout, stderr)
	}
	_, kf := receipts.GenerateKey()
	if *out == "" {
		j, _ := json.MarshalIndent(kf, "", "  ")
		fmt.Fprintf(stdout, "%s\n", j)
		return 0
	}
	if err := receipts.WriteKeyFile(*out, kf); err != nil {
		errorf(stderr, "keygen: %v", err)
		return 2
	}
	pub, _ := receipts.ParsePublicKeyHex(kf.PublicKey)
	j, _ := json.MarshalIndent(map[string]any{"keys": []any{receipts.JWK(pub)}}, "", "  ")
	fmt.Fprintf(stdout, "%s\n", j)
	fmt.Fprintf(stderr, "docket: wrote issuer key %s to %s\n", kf.KID, *out)
	return 0
}

// validKeyName reports whether name can name a signed-note key that
// docket-log and docket-witness accept: non-empty, printable, no spaces and
// no '+' (note's rule).
func validKeyName(name string) bool {
	if name == "" || strings.Contains(name, "+") {
		return false
	}
	for _, r := range name {
		if r <= ' ' || r == 0x7f || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func noteKeygen(logName, witnessName, out string, stdout, stderr io.Writer) int {
	skey, vkey, err := c2sp.GenerateKey(logName + witnessName)
	if err != nil {
		errorf(stderr, "keygen: %v", err)
		return 2
	}
	if witnessName != "" {
		if vkey, err = c2sp.CosignatureVKey(vkey); err != nil {
			errorf(stderr, "keygen: %v", err)
			return 2
		}
	}
	if out == "" {
		fmt.Fprintln(stdout, skey)
		fmt.Fprintln(stdout, vkey)
		return 0
	}
	if err := c2sp.WriteKeyFiles(out, skey, vkey); err != nil {
		errorf(stderr, "keygen: %v", err)
		return 2
	}
	fmt.Fprintln(stdout, vkey)
	return 0
}
