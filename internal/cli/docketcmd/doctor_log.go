package docketcmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/docketlog/docket/c2sp"
	"github.com/docketlog/docket/internal/plural"
	"github.com/docketlog/docket/logclient"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// doctorTimeout bounds the doctor's reading of the log's checkpoint.
const doctorTimeout = 10 * time.Second

// doctorReport prints the doctor's lines: one per check, a failure or a
// warning with its fix; with -json, one JSON object per line instead.
type doctorReport struct {
	w    io.Writer
	json bool
}

// doctorLine is one line of docket doctor -json.
type doctorLine struct {
	Status string `json:"status"` // ok, warn, FAIL, note, or result
	Check  string `json:"check,omitempty"`
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

func (r doctorReport) line(l doctorLine) {
	if r.json {
		b, _ := json.Marshal(l)
		r.w.Write(append(b, '\n'))
		return
	}
	switch {
	case l.Status == "result":
		fmt.Fprintln(r.w, l.Detail)
	case l.Check == "":
		fmt.Fprintf(r.w, "%-5s %s\n", l.Status, l.Detail)
	case l.Detail == "":
		fmt.Fprintf(r.w, "%-5s %s\n", l.Status, l.Check)
	default:
		fmt.Fprintf(r.w, "%-5s %s: %s\n", l.Status, l.Check, l.Detail)
	}
	if l.Fix != "" {
		fmt.Fprintf(r.w, "      fix: %s\n", l.Fix)
	}
}

func (r doctorReport) ok(name, detail string) {
	r.line(doctorLine{Status: "ok", Check: name, Detail: detail})
}
func (r doctorReport) warn(name, cause, fix string) {
	r.line(doctorLine{Status: "warn", Check: name, Detail: cause, Fix: fix})
}
func (r doctorReport) fail(name, cause, fix string) bool {
	r.line(doctorLine{Status: "FAIL", Check: name, Detail: cause, Fix: fix})
	return false
}

// doctorLog checks the path from the project to its log: the witness
// policy, the log's answer, the checkpoint's signature and cosignatures.
// It reports whether every check passed.
func doctorLog(ctx context.Context, s *store.Store, cfg store.Config, r doctorReport) bool {
	initFix := "docket init -log " + cfg.LogURL + " -log-key VKEY -witness-policy FILE"
	// The witness policy, as every client of the log reads it.
	v, err := s.ProofVerifier(cfg)
	switch {
	case err != nil && cfg.WitnessPolicy != "":
		fix := "write a C2SP tlog-policy file with a line \"log " + cfg.LogKey + "\", the witnesses and one quorum line, and name it: " + initFix
		return r.fail("witness policy "+cfg.WitnessPolicy, err.Error(), fix)
	case err != nil:
		return r.fail("log key", err.Error(), initFix)
	case cfg.WitnessPolicy == "":
		r.warn("witness policy", "none configured: a proof is trusted on the log's signature alone, and a log that shows this project another view than everyone else's goes unseen",
			initFix)
	case len(v.Policy().Logs) == 0:
		return r.fail("witness policy "+cfg.WitnessPolicy, "lists no log, so nothing ties it to the log key "+keyName(cfg.LogKey),
			"add the line \"log "+cfg.LogKey+"\" to "+cfg.WitnessPolicy)
	default:
		r.ok("witness policy "+cfg.WitnessPolicy, fmt.Sprintf("lists the log key; quorum %s of %d witnesses", v.Policy().Quorum, len(v.Policy().Witnesses)))
	}

	ops, err := logclient.NewHTTPOps(cfg.LogURL, &http.Client{Timeout: doctorTimeout}, "")
	if err != nil {
		return r.fail("log", err.Error(), initFix)
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	signed, err := ops.ReadRemote(ctx, "checkpoint", logclient.MaxCheckpointSize)
	if err != nil {
		p := explainLogErr(err, cfg, v)
		return r.fail("log "+cfg.LogURL, p.Cause, p.Fix)
	}
	// The log's own signature, apart from the quorum, so that a wrong key
	// and a missing cosignature are told apart.
	bare, err := c2sp.NewProofVerifier(cfg.LogKey, nil)
	if err != nil {
		return r.fail("log key", err.Error(), initFix)
	}
	cp, err := bare.VerifyCheckpoint(signed)
	if err != nil {
		cause := "the log's checkpoint is not signed by the configured log key " + keyName(cfg.LogKey)
		if names := signerNames(signed); len(names) > 0 {
			cause += "; it is signed by " + strings.Join(names, ", ")
		}
		return r.fail("log "+cfg.LogURL, cause, "set the key the log signs with (the .pub of docket-log's -key): docket init -log "+cfg.LogURL+" -log-key VKEY")
	}
	r.ok("log "+cfg.LogURL, fmt.Sprintf("answers; checkpoint of size %d signed by %s", cp.Size, keyName(cfg.LogKey)))
	if v.Witnessed() {
		if _, err := v.VerifyCheckpoint(signed); err != nil {
			missing := missingCosigners(v.Policy(), signed)
			cause := "the log's checkpoint is not cosigned by the quorum " + v.Policy().Quorum
			if len(missing) > 0 {
				cause += "; no valid cosignature from " + strings.Join(missing, ", ")
			}
			return r.fail("witness quorum", cause+witnessList(v),
				"start those witnesses and check that docket-log's -witness-policy names them; or fix "+cfg.WitnessPolicy)
		}
		r.ok("witness quorum", "the checkpoint is cosigned by quorum "+v.Policy().Quorum)
	}
	return true
}

// doctorLastSync reports the outcome of the last docket sync.
func doctorLastSync(s *store.Store, r doctorReport) bool {
	last, ran, err := s.LastSync()
	switch {
	case err != nil:
		return r.fail("last sync", err.Error(), "remove "+store.DirName+"/"+store.SyncLogFile+"; the next docket sync writes it again")
	case !ran:
		r.ok("last sync", "none yet")
	case last.Error != "":
		fix := last.Fix
		if fix == "" {
			fix = "run docket sync and read its error"
		}
		return r.fail("last sync", fmt.Sprintf("%s%s failed: %s (%s left pending)", ago(last.Time), bgWord(last.Background), last.Error, plural.Count(last.Pending, "receipt")), fix)
	case last.Rejected > 0:
		return r.fail("last sync", fmt.Sprintf("%s%s: the log refused %s for good", ago(last.Time), bgWord(last.Background), plural.Count(last.Rejected, "receipt")),
			"run docket sync and read why; docket repair SESSION moves a damaged chain tail aside")
	default:
		r.ok("last sync", fmt.Sprintf("%s%s: %s stored, %d pending", ago(last.Time), bgWord(last.Background), plural.Count(last.Stored, "proof"), last.Pending))
	}
	return true
}

// doctorPending reports the receipts without a proof, and the chains'
// damaged tails.
func doctorPending(s *store.Store, r doctorReport) bool {
	if damaged, err := s.Damaged(); err == nil && len(damaged) > 0 {
		r.warn("chain tails", fmt.Sprintf("%s moved aside: %s", plural.Count(len(damaged), "torn or damaged tail"), strings.Join(damaged, ", ")),
			"inspect them; they are not part of any chain (docket show SESSION says what the chain holds)")
	}
	pend, _, err := s.Pending(store.Cursor{})
	if err != nil {
		var bt *store.BadTailError
		if errors.As(err, &bt) {
			return r.fail("chain "+bt.Chain, "the last line is not a receipt", "docket repair "+bt.Session)
		}
		return r.fail("pending receipts", err.Error(), "docket repair SESSION moves a damaged chain tail aside")
	}
	if len(pend) == 0 {
		r.ok("pending receipts", "none")
		return true
	}
	var oldest time.Time
	for _, p := range pend {
		rc, err := receipts.Open(p.Receipt, nil)
		if err != nil {
			continue
		}
		if t, err := time.Parse(time.RFC3339Nano, rc.Payload.IssuedAt); err == nil && (oldest.IsZero() || t.Before(oldest)) {
			oldest = t
		}
	}
	msg := fmt.Sprintf("%d, the oldest issued %s", len(pend), ago(oldest))
	if oldest.IsZero() {
		msg = fmt.Sprintf("%d", len(pend))
	}
	cfg, err := s.Config()
	if err == nil && !cfg.HasLog() {
		r.ok("pending receipts", msg+" (no log configured: they stay local)")
		return true
	}
	if !oldest.IsZero() && time.Since(oldest) > time.Hour {
		r.warn("pending receipts", msg, "docket sync, and fix the cause it names")
		return true
	}
	r.ok("pending receipts", msg)
	return true
}

func bgWord(background bool) string {
	if background {
		return " (background)"
	}
	return ""
}

// ago says how long ago t was, to the second.
func ago(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	return time.Since(t).Round(time.Second).String() + " ago"
}
