package docketcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/docketlog/docket/internal/plural"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/policy/suggest"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

// initModes sets observe mode and the local journal in the project's
// configuration as -observe and -journal say; a flag not given leaves its
// setting as it is.
func initModes(s *store.Store, fs *flag.FlagSet, observe, journal bool) (string, error) {
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["observe"] && !set["journal"] && !set["commit-inputs"] {
		return "", nil
	}
	c, err := s.Config()
	if err != nil {
		return "", err
	}
	var said []string
	if set["observe"] {
		c.Observe = observe
		said = append(said, map[bool]string{
			true:  "observe mode: the policy's denials and asks are receipted as not enforced and the calls run",
			false: "observe mode off: the policy is enforced",
		}[observe])
	}
	if set["journal"] {
		c.Journal = journal
		said = append(said, map[bool]string{
			true:  "journal on: each call's input is kept in " + filepath.Join(store.DirName, store.JournalDir) + " (never submitted)",
			false: "journal off",
		}[journal])
	}
	if set["commit-inputs"] {
		c.InputCommitment = ""
		said = append(said, "receipts carry tool_input_hash (unsalted)")
		if fs.Lookup("commit-inputs").Value.String() == "true" {
			c.InputCommitment, c.Journal = store.CommitSalted, true
			said[len(said)-1] = "receipts carry a salted tool_input_commitment; the salts stay in the journal"
		}
	}
	if err := s.WriteConfig(c); err != nil {
		return "", err
	}
	return "wrote " + filepath.Join(store.DirName, store.ConfigFile) + " (" + strings.Join(said, "; ") + ")", nil
}

// runPolicySuggest is docket policy suggest: the draft on stdout, a
// summary on stderr.
func runPolicySuggest(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket policy suggest", policyUsage, stderr)
	dir := fs.String("dir", "", "")
	all := fs.Bool("all", false, "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 {
		errorf(stderr, "policy suggest: unexpected arguments %q", fs.Args())
		return 2
	}
	project, ok := findProject(stderr, "policy suggest")
	if !ok {
		return 2
	}
	s := store.Open(project)
	if *dir == "" {
		*dir = s.PolicyDir()
	}
	eng, err := policy.LoadDir(*dir)
	if err != nil {
		errorf(stderr, "policy: %v", err)
		hintf(stderr, "every call is denied while the policy does not load; fix it before drafting permits")
		return 2
	}
	obs, err := suggest.Observed(s, *all)
	if err != nil {
		errorf(stderr, "policy suggest: %v", err)
		return 2
	}
	home, _ := os.UserHomeDir()
	res, err := suggest.Draft(ctx, obs, suggest.Options{Policy: eng, Project: project, Home: home})
	if err != nil {
		errorf(stderr, "policy suggest: %v", err)
		return 2
	}
	if _, err := stdout.Write(res.Cedar); err != nil {
		errorf(stderr, "policy suggest: %v", err)
		return 2
	}
	fmt.Fprintf(stderr, "docket: drafted %s from %s (%d would be allowed); %s not suggested, see the comments\n",
		plural.Count(res.Permits, "permit"), plural.Count(res.Observed, "observed decision"), res.Allowed, plural.Count(len(res.Refused), "kind"))
	if cfg, err := s.Config(); err == nil && !cfg.Journal {
		hintf(stderr, "the journal is off, so no call's input is known: docket init -journal keeps the inputs suggest drafts from")
	} else if err == nil && !cfg.Observe && !*all && res.Observed == 0 {
		hintf(stderr, "observe mode is off: docket init -observe, or -all to draft from the enforced denials")
	}
	return 0
}

// errObserved is doctor's finding for a pre hook that answered its
// synthetic denied call as allowed because the project is in observe mode,
// having signed the deny as not enforced.
var errObserved = errors.New(`exit 0: observe mode answered the deny of rm -rf / as allowed, and signed it "enforced": false; the gate decides but does not block`)

// observedDeny reports whether the doctor run's probe session's last
// receipt is a deny observe mode did not enforce.
func observedDeny(project, session string) bool {
	recs, err := store.Open(project).Receipts(session)
	if err != nil || len(recs) == 0 {
		return false
	}
	r, err := receipts.Open(recs[len(recs)-1], nil)
	if err != nil {
		return false
	}
	p := r.Payload
	return p.HookEvent == receipts.PreToolUse && p.Decision == receipts.Deny && p.Enforced != nil && !*p.Enforced
}
