//go:build darwin

package confine

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

const sandboxExec = "/usr/bin/sandbox-exec"

// Support reports whether sandbox-exec is there to apply a Seatbelt
// profile.
func Support() Status {
	if _, err := os.Stat(sandboxExec); err != nil {
		return Status{Detail: "no " + sandboxExec}
	}
	return Status{Mechanism: MechanismSeatbelt, Detail: "sandbox-exec"}
}

// Stage is a no-op on macOS: sandbox-exec applies the profile.
func Stage() {}

// Run runs cmd under c's Seatbelt profile and returns its exit status.
func Run(c *Confinement, cmd Command) (int, error) {
	if len(cmd.Args) == 0 {
		return 0, errors.New("no command")
	}
	if s := Support(); s.Mechanism == "" {
		return 0, cannot("%s", s.Detail)
	}
	child := exec.Command(sandboxExec, append([]string{"-p", c.SeatbeltProfile(), "--"}, cmd.Args...)...)
	child.Dir, child.Env = cmd.Dir, cmd.Env
	child.Stdin, child.Stdout, child.Stderr = orStd(cmd.Stdin, os.Stdin), orStdW(cmd.Stdout, os.Stdout), orStdW(cmd.Stderr, os.Stderr)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	if err := child.Start(); err != nil {
		return 0, cannot("starting sandbox-exec: %v", err)
	}
	go func() {
		for s := range sigs {
			_ = child.Process.Signal(s)
		}
	}()
	_ = child.Wait()
	st, _ := child.ProcessState.Sys().(syscall.WaitStatus)
	if st.Signaled() {
		return 128 + int(st.Signal()), nil
	}
	return st.ExitStatus(), nil
}

// Mechanism returns the mechanism Run applies here ("" when none).
func Mechanism() string { return Support().Mechanism }
