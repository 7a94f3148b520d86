package docketcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/docketlog/docket/confine"
	"github.com/docketlog/docket/receipts"
	"github.com/docketlog/docket/store"
)

const execUsage = `Usage:
    docket exec [-project DIR] [-confine FILE [-digest sha256:…]] [-mechanism M] -- COMMAND [ARG ...]
    docket exec ... [-cwd-file FILE] -shell 'SHELL COMMAND'

exec runs COMMAND under the confinement derived from the project's policy
(docket policy confinement): on Linux, Landlock and secrets masked in a
private mount namespace; on macOS, a Seatbelt profile. Every child inherits
it and none can drop it. The exit status, stdout, stderr and signals are
the command's. When the confinement cannot be applied the command does not
run (exit 126).

Options:
    -project DIR   the project (default: $CLAUDE_PROJECT_DIR or the working directory)
    -confine FILE  the confinement to apply (as derived by the hook) instead of deriving it
    -digest D      refuse FILE unless its digest is D
    -mechanism M   refuse to run unless this machine confines with M (landlock, seatbelt)
    -shell CMD     run CMD with bash -c (sh when bash is absent)
    -cwd-file F    with -shell: write the shell's final working directory to F

Exit codes:
    126  the confinement could not be applied; the command did not run
    127  the command was not found
    otherwise the command's own (128+N when signal N ended it)
`

func runExec(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket exec", execUsage, stderr)
	project := fs.String("project", "", "")
	file := fs.String("confine", "", "")
	digest := fs.String("digest", "", "")
	mechanism := fs.String("mechanism", "", "")
	shell := fs.String("shell", "", "")
	cwdFile := fs.String("cwd-file", "", "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	argv := fs.Args()
	switch {
	case *shell != "" && len(argv) > 0:
		errorf(stderr, "exec: -shell and a command are exclusive")
		return 2
	case *shell == "" && len(argv) == 0:
		errorf(stderr, "exec: no command")
		fmt.Fprint(stderr, execUsage)
		return 2
	case *cwdFile != "" && *shell == "":
		errorf(stderr, "exec: -cwd-file needs -shell")
		return 2
	}
	env := os.Environ()
	if *shell != "" {
		script := *shell
		if *cwdFile != "" {
			script = "trap 'pwd -P >| \"$DOCKET_CWD_FILE\"' EXIT\n" + script
			env = append(env, "DOCKET_CWD_FILE="+*cwdFile)
		}
		sh := "bash"
		if _, err := os.Stat("/bin/bash"); err != nil {
			sh = "sh"
		}
		argv = []string{sh, "-c", script}
	}
	c, _, err := execConfinement(ctx, *project, *file, *digest)
	if err != nil {
		errorf(stderr, "exec: %v; the command did not run", err)
		return confine.ExitCannotConfine
	}
	if m := confine.Mechanism(); *mechanism != "" && m != *mechanism {
		errorf(stderr, "exec: the confinement must be applied with %s, and this machine has %q; the command did not run", *mechanism, m)
		return confine.ExitCannotConfine
	}
	code, err := confine.Run(c, confine.Command{Args: argv, Env: env, Stdin: stdin, Stdout: stdout, Stderr: stderr})
	if err != nil {
		errorf(stderr, "exec: %v; the command did not run", err)
		hintf(stderr, "docket doctor says what this machine can confine")
		return confine.ExitCannotConfine
	}
	return code
}

// execConfinement returns the confinement named by file (checked against
// digest) or else the project's, derived from its policy.
func execConfinement(ctx context.Context, project, file, digest string, extra ...string) (*confine.Confinement, string, error) {
	if file != "" {
		c, err := confine.Load(file, digest)
		return c, file, err
	}
	if digest != "" {
		return nil, "", fmt.Errorf("-digest needs -confine")
	}
	if project == "" {
		p, err := store.ProjectDir()
		if err != nil {
			return nil, "", err
		}
		project = p
	}
	abs, err := filepath.Abs(project)
	if err != nil {
		return nil, "", err
	}
	return confine.ForProject(ctx, abs, extra...)
}

const runUsage = `Usage:
    docket run [-project DIR] -- AGENT [ARG ...]

run starts an agent (claude, gemini, codex, …) with its whole process tree
under the project's confinement, its own state directories (~/.claude,
~/.gemini, ~/.codex, …) and the project's .docket (its hooks write
receipts there) writable. Use it for agents whose hooks cannot rewrite a
call to run under docket exec. Exit codes are exec's.
`

// agentState are the directories and files agents keep their own state in.
var agentState = []string{".claude", ".claude.json", ".claude.json.backup", ".gemini", ".codex",
	".config/claude", ".local/state/claude", ".local/share/claude", ".config/gemini", ".npm"}

func runRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket run", runUsage, stderr)
	project := fs.String("project", "", "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() == 0 {
		errorf(stderr, "run: no agent command")
		fmt.Fprint(stderr, runUsage)
		return 2
	}
	home, err := os.UserHomeDir()
	if err != nil {
		errorf(stderr, "run: %v", err)
		return confine.ExitCannotConfine
	}
	p := *project
	if p == "" {
		if p, err = store.ProjectDir(); err != nil {
			errorf(stderr, "run: %v", err)
			return confine.ExitCannotConfine
		}
	}
	extra := []string{filepath.Join(p, store.DirName)}
	for _, s := range agentState {
		extra = append(extra, filepath.Join(home, s))
	}
	c, _, err := execConfinement(ctx, p, "", "", extra...)
	if err != nil {
		errorf(stderr, "run: %v; the agent did not start", err)
		return confine.ExitCannotConfine
	}
	// The agent writes its own state, and its hooks read the issuer key and
	// write the store: neither is read-only nor masked under run.
	c.ReadOnly, c.DenyRel = nil, nil
	code, err := confine.Run(c, confine.Command{Args: fs.Args(), Stdin: stdin, Stdout: stdout, Stderr: stderr})
	if err != nil {
		errorf(stderr, "run: %v; the agent did not start", err)
		return confine.ExitCannotConfine
	}
	return code
}

// printConfinement prints the project's confinement, its digest and what
// this machine can apply it with (docket policy confinement).
func printConfinement(ctx context.Context, project string, asJSON bool, stdout, stderr io.Writer) int {
	c, file, err := execConfinement(ctx, project, "", "")
	if err != nil {
		errorf(stderr, "policy confinement: %v", err)
		return 2
	}
	d, err := c.Digest()
	if err != nil {
		errorf(stderr, "policy confinement: %v", err)
		return 2
	}
	if asJSON {
		b, _ := c.Canonical()
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	fmt.Fprintf(stdout, "confinement_digest %s\nfile %s\nmechanism %s\n%s\n", d, file, confine.Support(), b)
	return 0
}

// confineServerCommand returns the command line that runs argv under the
// project's confinement (docket mcp -confine), and the receipts' member
// naming it. It fails where this machine cannot confine.
func confineServerCommand(ctx context.Context, project string, argv []string) ([]string, *receipts.Confinement, error) {
	st := confine.Support()
	if st.Mechanism == "" {
		return nil, nil, fmt.Errorf("cannot confine the server: %s", st.Detail)
	}
	c, file, err := execConfinement(ctx, project, "", "")
	if err != nil {
		return nil, nil, err
	}
	d, err := c.Digest()
	if err != nil {
		return nil, nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	if filepath.IsAbs(os.Args[0]) {
		self = os.Args[0] // the test binaries answer as docket under that name
	}
	cmd := append([]string{self, "exec", "-confine", file, "-digest", d, "-mechanism", st.Mechanism, "--"}, argv...)
	return cmd, &receipts.Confinement{Mechanism: st.Mechanism, Digest: d}, nil
}
