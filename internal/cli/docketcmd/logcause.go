package docketcmd

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"

	"golang.org/x/mod/sumdb/note"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/logclient"
	"github.com/docketlog/docket/store"
)

// A logProblem is why talking to the configured log failed, said the way
// an operator can act on: the cause in one line, and the fix.
type logProblem struct {
	Cause string
	Fix   string
}

// explainLogErr names the cause of err, an error of the log client talking
// to the log of cfg (v is its proof verifier, nil if it could not be set
// up), and its fix. It looks through the retries' "last error" wrapping, so
// a sync that ran out of time names what it kept hitting.
func explainLogErr(err error, cfg store.Config, v *c2sp.ProofVerifier) logProblem {
	var se *logclient.StatusError
	var dns *net.DNSError
	switch {
	case err == nil:
		return logProblem{"receipts remain pending", "run docket sync again; nothing is lost"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return logProblem{"the log at " + cfg.LogURL + " refuses connections: nothing listens there",
			"start docket-log there, or point the project at the right log: docket init -log URL -log-key VKEY"}
	case errors.As(err, &dns):
		return logProblem{"the log's host does not resolve: " + dns.Error(),
			"fix the log URL: docket init -log URL -log-key VKEY"}
	case errors.As(err, &se) && se.Code == "not_published":
		return logProblem{"the log cannot get its checkpoint cosigned by its witnesses (" + se.Error() + ")" + witnessList(v),
			"start the witnesses, or check docket-log's -witness-policy and the witnesses' logs"}
	case errors.As(err, &se) && se.Status == http.StatusNotFound:
		return logProblem{"the URL " + cfg.LogURL + " answers 404: it is not a docket-log",
			"fix the log URL: docket init -log URL -log-key VKEY"}
	case errors.As(err, &se) && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden):
		return logProblem{"the log refuses this project: " + se.Error(),
			"ask the log's operator to admit this issuer key (docket-log -issuers), or pass its token (docket sync -token-env VAR)"}
	case errors.Is(err, c2sp.ErrWitnessQuorum):
		return logProblem{"the log's checkpoint is not cosigned by the witness quorum" + witnessList(v),
			"start the witnesses, or fix the witness policy (" + cfg.WitnessPolicy + ")"}
	case errors.Is(err, c2sp.ErrCheckpointSig), errors.Is(err, logclient.ErrBadProof):
		return logProblem{"the log's answer does not verify under the configured log key " + keyName(cfg.LogKey) + ": " + err.Error(),
			"set the key the log really signs with (docket-log's key .pub): docket init -log " + cfg.LogURL + " -log-key VKEY"}
	case errors.Is(err, context.DeadlineExceeded):
		return logProblem{"the log did not answer in time: " + err.Error(),
			"check that the log at " + cfg.LogURL + " is up, then run docket sync again; nothing is lost"}
	}
	return logProblem{err.Error(), "run docket doctor; fix what it names, then docket sync again; nothing is lost"}
}

// witnessList says which witnesses the policy of v names, for an error
// about the quorum.
func witnessList(v *c2sp.ProofVerifier) string {
	if v == nil || v.Policy() == nil || len(v.Policy().Witnesses) == 0 {
		return ""
	}
	var names []string
	for _, w := range v.Policy().Witnesses {
		n := w.Name
		if w.URL != "" {
			n += " (" + w.URL + ")"
		}
		names = append(names, n)
	}
	return "; quorum " + v.Policy().Quorum + " of witnesses " + strings.Join(names, ", ")
}

// missingCosigners returns the witnesses of p whose cosignature signed does
// not carry (or carries one that does not verify).
func missingCosigners(p *c2sp.Policy, signed []byte) []string {
	var missing []string
	for _, w := range p.Witnesses {
		if _, err := note.Open(signed, note.VerifierList(w.Verifier())); err != nil {
			missing = append(missing, w.Name)
		}
	}
	return missing
}

// signerNames returns the names (name+hash) of the signature lines of a signed note,
// verified or not: who the log says it is.
func signerNames(signed []byte) []string {
	_, sigs, ok := strings.Cut(string(signed), "\n\n")
	if !ok {
		return nil
	}
	var names []string
	for _, l := range strings.Split(sigs, "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "—" {
			continue
		}
		// The signature starts with the key hash: name+hash tells keys apart.
		if sig, err := base64.StdEncoding.DecodeString(f[2]); err == nil && len(sig) >= 4 {
			f[1] += fmt.Sprintf("+%08x", binary.BigEndian.Uint32(sig))
		}
		names = append(names, f[1])
	}
	return names
}

// keyName is the name+hash of a vkey, enough to tell keys apart.
func keyName(vkey string) string {
	if f := strings.SplitN(vkey, "+", 3); len(f) == 3 {
		return f[0] + "+" + f[1]
	}
	return vkey
}

// String renders a problem on one line.
func (p logProblem) String() string { return fmt.Sprintf("%s (fix: %s)", p.Cause, p.Fix) }
