//go:build linux

package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// minABI is the lowest Landlock ABI the confinement accepts: 3 handles
// truncate, without which a confined command could empty any file it can
// read.
const minABI = 3

// landlockABI returns the kernel's Landlock ABI, or why it cannot be used.
func landlockABI() (int, error) {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0, fmt.Errorf("no Landlock: %v", err)
	}
	if v < minABI {
		return v, fmt.Errorf("the kernel's Landlock ABI is %d, want %d or later", v, minABI)
	}
	return v, nil
}

// Mechanism returns the mechanism Run applies here, checking only what one
// system call can tell (the Landlock ABI): Run itself fails, closed, when
// the user namespace it needs is refused. Support checks that too.
func Mechanism() string {
	if _, err := landlockABI(); err != nil {
		return ""
	}
	return MechanismLandlock
}

// Support reports whether this kernel can apply a confinement: Landlock at
// minABI or later and unprivileged user namespaces for the masks (tried by
// starting a process in one).
func Support() Status {
	v, err := landlockABI()
	if err != nil {
		return Status{Detail: err.Error()}
	}
	if err := probeUserns(); err != nil {
		return Status{Detail: fmt.Sprintf("Landlock ABI %d, but no user namespace for the masks: %v", v, err)}
	}
	return Status{Mechanism: MechanismLandlock, Detail: "ABI " + strconv.Itoa(v) + ", secrets masked in a private mount namespace"}
}

func probeUserns() error {
	cmd := exec.Command("/proc/self/exe")
	cmd.Args = []string{"docket-userns-probe"}
	cmd.Env = []string{stageEnv + "=probe"}
	cmd.SysProcAttr = usernsAttr()
	return cmd.Run()
}

// stageEnv marks the re-executed docket that applies the confinement to
// itself and then executes the command.
const stageEnv = "DOCKET_CONFINE_STAGE"

// plan is what the first stage hands the second on file descriptor 3.
type plan struct {
	Confinement *Confinement `json:"confinement"`
	Masks       []Mask       `json:"masks"`
	MaskDir     string       `json:"mask_dir"`
	Args        []string     `json:"args"`
	Env         []string     `json:"env"`
}

func usernsAttr() *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	return &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	}
}

// Run runs cmd under c and returns its exit status: the command's own, or
// 128+N when a signal N ended it (after raising N on the caller where it
// is ours to raise, see Exit). Signals docket receives are passed on. An
// error means the command did not run (the caller must not run it
// unconfined).
func Run(c *Confinement, cmd Command) (int, error) {
	if len(cmd.Args) == 0 {
		return 0, errors.New("no command")
	}
	if _, err := landlockABI(); err != nil {
		return 0, cannot("%v", err)
	}
	masks, err := c.Masks()
	if err != nil {
		return 0, err
	}
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("finding docket's own executable: %w", err)
	}
	maskDir, err := os.MkdirTemp("", "docket-mask-")
	if err != nil {
		return 0, err
	}
	defer os.Remove(maskDir)
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	data, err := json.Marshal(plan{Confinement: c, Masks: masks, MaskDir: maskDir, Args: cmd.Args, Env: env})
	if err != nil {
		return 0, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	reportR, reportW, err := os.Pipe()
	if err != nil {
		r.Close()
		w.Close()
		return 0, err
	}
	defer reportR.Close()
	child := exec.Command(self)
	child.Args = []string{"docket-confined"}
	child.Env = []string{stageEnv + "=exec"}
	child.Dir = cmd.Dir
	child.Stdin, child.Stdout, child.Stderr = orStd(cmd.Stdin, os.Stdin), orStdW(cmd.Stdout, os.Stdout), orStdW(cmd.Stderr, os.Stderr)
	child.ExtraFiles = []*os.File{r, reportW}
	child.SysProcAttr = usernsAttr()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
	defer signal.Stop(sigs)
	if err := child.Start(); err != nil {
		r.Close()
		w.Close()
		reportW.Close()
		return 0, cannot("starting the confined stage: %v", err)
	}
	r.Close()
	reportW.Close()
	report := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(reportR, 4096))
		report <- string(b)
	}()
	_, werr := w.Write(data)
	w.Close()
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = child.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err = child.Wait()
	close(done)
	if msg := <-report; msg != "" {
		return 0, cannot("%s", msg)
	}
	if werr != nil {
		return 0, fmt.Errorf("handing the confinement over: %w", werr)
	}
	st, ok := child.ProcessState.Sys().(syscall.WaitStatus)
	if err != nil && !ok {
		return 0, err
	}
	if st.Signaled() {
		return 128 + int(st.Signal()), nil
	}
	return st.ExitStatus(), nil
}

// stageFailed is the second stage's exit status when it could not apply
// the confinement; the command never started.
const stageFailed = 125

// Stage runs the second stage when this process is one (it never returns
// then) and returns otherwise. The docket binary calls it first thing in
// main: the second stage is docket re-executed in a new user and mount
// namespace, which masks the secrets, restricts itself with Landlock and
// executes the command, so the command and every child inherit both.
func Stage() {
	switch os.Getenv(stageEnv) {
	case "":
		return
	case "probe":
		os.Exit(0)
	}
	// Descriptor 4 reports a failure to confine to the first stage; it
	// closes on exec, so reading it to its end tells the first stage that
	// the command started (nothing read) or why not.
	report := os.NewFile(4, "report")
	syscall.CloseOnExec(4)
	args, env, err := stage()
	if err != nil {
		fmt.Fprintf(report, "%v", err)
		os.Exit(stageFailed)
	}
	report.Close()
	path, err := lookPath(args[0], env)
	if err != nil {
		fmt.Fprintf(os.Stderr, "docket: error: exec: %v\n", err)
		os.Exit(127)
	}
	err = syscall.Exec(path, args, env)
	fmt.Fprintf(os.Stderr, "docket: error: exec %s: %v\n", args[0], err)
	os.Exit(126)
}

// stage reads the plan, applies the masks and Landlock to this process,
// and returns the command to execute.
func stage() (args, env []string, err error) {
	f := os.NewFile(3, "plan")
	data, err := io.ReadAll(io.LimitReader(f, 64<<20))
	f.Close()
	if err != nil {
		return nil, nil, err
	}
	var p plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, nil, fmt.Errorf("reading the plan: %w", err)
	}
	if p.Confinement == nil || len(p.Args) == 0 {
		return nil, nil, errors.New("empty plan")
	}
	if err := applyMasks(p.MaskDir, p.Masks); err != nil {
		return nil, nil, err
	}
	if err := landlockSelf(p.Confinement); err != nil {
		return nil, nil, err
	}
	return p.Args, p.Env, nil
}

// lookPath finds a program in the PATH of env.
func lookPath(name string, env []string) (string, error) {
	if filepath.Base(name) != name {
		return name, nil
	}
	for i := len(env) - 1; i >= 0; i-- {
		if len(env[i]) > 5 && env[i][:5] == "PATH=" {
			for _, dir := range filepath.SplitList(env[i][5:]) {
				if dir == "" {
					dir = "."
				}
				p := filepath.Join(dir, name)
				if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					return p, nil
				}
			}
			return "", fmt.Errorf("%s: command not found", name)
		}
	}
	return exec.LookPath(name)
}

// applyMasks hides each secret behind an empty, unreadable file or
// directory and makes each read-only tree read-only, in this process's
// private mount namespace. Read-only trees go first, so a secret inside
// one is masked on top of it.
func applyMasks(dir string, masks []Mask) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	if len(masks) == 0 {
		return nil
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0700,size=4k"); err != nil {
		return fmt.Errorf("mounting the mask source: %w", err)
	}
	file, sub := filepath.Join(dir, "f"), filepath.Join(dir, "d")
	if err := os.WriteFile(file, nil, 0); err != nil {
		return err
	}
	if err := os.Mkdir(sub, 0); err != nil {
		return err
	}
	if err := os.Chmod(file, 0); err != nil {
		return err
	}
	for _, ro := range []bool{true, false} {
		for _, m := range masks {
			if m.ReadOnly != ro {
				continue
			}
			src := file
			if m.Dir {
				src = sub
			}
			if ro {
				src = m.Path
			}
			if err := unix.Mount(src, m.Path, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("masking %s: %w", m.Path, err)
			}
			if err := remountReadOnly(m.Path); err != nil {
				return fmt.Errorf("masking %s: %w", m.Path, err)
			}
		}
	}
	return unix.Unmount(dir, unix.MNT_DETACH)
}

// remountReadOnly makes the bind mount at p read-only, keeping the flags
// a user namespace may not clear.
func remountReadOnly(p string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return err
	}
	keep := uintptr(st.Flags) & (unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC | unix.ST_NOATIME | unix.ST_NODIRATIME | unix.ST_RELATIME)
	return unix.Mount("", p, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|keep, "")
}

// landlockSelf restricts this process, and every process it executes, to
// reading everything (the masks hide the secrets) and writing only the
// confinement's write trees and the terminal and null devices. Landlock
// also forbids changing mounts from now on, so the masks stay.
func landlockSelf(c *Confinement) error {
	var dirs, files []string
	for _, p := range append(append([]string(nil), c.Write...), c.ToolWrite...) {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			files = append(files, p)
		} else {
			dirs = append(dirs, p)
		}
	}
	rules := []landlock.Rule{
		landlock.RODirs(c.Read...),
		landlock.RWDirs(dirs...).IgnoreIfMissing(),
		landlock.RWFiles(files...).IgnoreIfMissing(),
		landlock.RWFiles("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/random", "/dev/urandom").IgnoreIfMissing(),
		landlock.RWDirs("/dev/pts").IgnoreIfMissing(),
	}
	if err := landlock.V7.BestEffort().RestrictPaths(rules...); err != nil {
		return fmt.Errorf("landlock: %w", err)
	}
	return nil
}
