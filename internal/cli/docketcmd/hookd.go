package docketcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/docketlog/docket/internal/durable"
	"github.com/docketlog/docket/internal/hookd"
	"github.com/docketlog/docket/internal/stackgrow"
	"github.com/docketlog/docket/store"
)

const hookdUsage = `Usage:
    docket hookd [-idle D]

The project's gate daemon: it runs the pre and post hooks that docket
hook pre, post and post-failure forward to it over .docket/hookd.sock, on
the hook process's own standard streams (a post hook sends its event and
keeps it, and receipts it itself if the daemon does not answer), keeping
the parsed policy between calls (a policy whose files changed is loaded
again; the key and configuration are read for every call, as in a hook
process) and the files of its 16 most recent sessions open. The first
pre hook that finds no daemon starts one. It answers only hooks of its user, its docket binary, its
working directory and its environment; any other hook decides in its own
process, and the daemon exits to make way for the one that hook starts.
It also exits after D without a call, and within seconds once its socket
is removed (the project deleted, or rm .docket/hookd.sock to stop it).
DOCKET_HOOKD=0 turns it off.
.docket/hookd.lock holds the daemon's process id.

Options:
    -idle D   exit after D without a call (default 10m)
`

// hookdIdle is how long a daemon waits for a call before it exits.
const hookdIdle = 10 * time.Minute

// hookdHeld is how many sessions' files a daemon keeps open between calls
// (store.HoldRecent): an agent's session appends on every call, and a
// project rarely runs more sessions at once.
const hookdHeld = 16

// hookdHeldIdle is how long a session's files stay open without an append.
const hookdHeldIdle = time.Minute

func runHookd(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("docket hookd", hookdUsage, stderr)
	idle := fs.Duration("idle", hookdIdle, "")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() > 0 || *idle <= 0 {
		errorf(stderr, "hookd: takes no arguments and a positive -idle")
		return 2
	}
	if err := serveHookd(ctx, *idle); err != nil {
		errorf(stderr, "hookd: %v", err)
		return 1
	}
	return 0
}

// errStale ends a daemon that declined a hook of another binary, working
// directory or environment.
var errStale = errors.New("a hook of another binary or environment")

// serveHookd serves the project of the working directory and environment
// until ctx ends, idle passes without a call, or a hook of another docket
// binary, working directory or environment arrives.
func serveHookd(ctx context.Context, idle time.Duration) error {
	project, err := store.ProjectDir()
	if err != nil {
		return err
	}
	dir := filepath.Join(project, store.DirName)
	lock, err := os.OpenFile(filepath.Join(dir, hookd.LockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if ok, err := durable.TryLock(lock); err != nil || !ok {
		return err // another daemon serves the project
	}
	// The lock file names the daemon, for whoever wants to stop it.
	_ = lock.Truncate(0)
	_, _ = lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	path := hookd.SocketPath(project)
	_ = os.Remove(path) // a dead daemon's; the lock says none is alive
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return err
	}
	defer ln.Close() // removes the socket
	if err := os.Chmod(path, 0o600); err != nil {
		return err
	}
	// One store for every call: the files of the sessions it appended to
	// last stay open between calls (each append still takes the locks,
	// reads the counter and head again and fdatasyncs, so the hooks in
	// other processes, docket sync and a relay stay correct beside it).
	st := store.Open(project)
	st.HoldRecent(hookdHeld)
	defer st.ReleaseIdle(0)
	self := hookdSelf{dir: mustGetwd(), env: sortedEnv(os.Environ()), store: st}
	if self.exe, err = hookd.ExeID(); err != nil {
		return err
	}
	// A daemon that makes way stops accepting; the calls it took run on
	// under the process's context (signals), not the one it cancels.
	calls := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	go watchSocket(ctx, cancel, path, st)
	var running sync.WaitGroup
	defer running.Wait()
	for {
		if err := ln.SetDeadline(time.Now().Add(idle)); err != nil {
			return err
		}
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil // ended, or stale (errStale)
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil // idle
			}
			return err
		}
		running.Add(1)
		go func() {
			stackgrow.Grow() // the hook's decoding and signing run deep
			defer running.Done()
			defer c.Close()
			if stale := self.serve(calls, c); stale {
				cancel(errStale)
			}
		}()
	}
}

// hookdWatch is how often a daemon checks that its socket is still there.
const hookdWatch = 2 * time.Second

// errGone ends a daemon whose socket was removed: its project was deleted
// (a temporary directory) or someone removed the socket to stop it. No hook
// can reach it any more, so it does not wait out its idle time.
var errGone = errors.New("its socket was removed")

// watchSocket cancels the daemon once path is no longer its socket, and
// closes the files of st's sessions idle for hookdHeldIdle.
func watchSocket(ctx context.Context, cancel context.CancelCauseFunc, path string, st *store.Store) {
	fi0, err := os.Stat(path)
	if err != nil {
		cancel(errGone)
		return
	}
	t := time.NewTicker(hookdWatch)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if fi, err := os.Stat(path); err != nil || !os.SameFile(fi0, fi) {
				cancel(errGone)
				return
			}
			st.ReleaseIdle(hookdHeldIdle)
		}
	}
}

// hookdSelf is what a request must match for the daemon to run it.
type hookdSelf struct {
	exe   [5]int64
	dir   string
	env   []string
	store *store.Store // the project's, for every call
}

// serve runs one forwarded hook, and reports whether the daemon should
// make way for another: the hook came from another docket binary, working
// directory or environment.
func (s hookdSelf) serve(ctx context.Context, c *net.UnixConn) (stale bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	uid := -1
	if err := raw.Control(func(fd uintptr) { uid, _ = hookd.PeerUID(int(fd)) }); err != nil || uid != os.Getuid() {
		return false
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	req, files, err := readHookRequest(c)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if err != nil {
		return false
	}
	if !hookd.Forwardable(req.Args) {
		_, _ = c.Write(hookd.DeclineReply())
		return false
	}
	if req.Exe != s.exe || req.Dir != s.dir || !slices.Equal(sortedEnv(req.Env), s.env) {
		// Another binary, or a hook run from elsewhere: it decides in
		// its own process, and the daemon makes way for the one that
		// hook starts (the latest hook's binary and environment win).
		_, _ = c.Write(hookd.DeclineReply())
		return true
	}
	var stdin io.Reader = files[0]
	if req.Piped { // a post hook's event, which the hook keeps
		stdin = bytes.NewReader(req.Stdin)
	}
	code := runHookFrom(ctx, time.Unix(0, req.Start), s.store, req.Args, stdin, files[1], files[2])
	_, _ = c.Write(hookd.ExitReply(code))
	return false
}

// readHookRequest reads one request and the three descriptors that come
// with its first bytes. The files are returned even with an error, for the
// caller to close.
func readHookRequest(c *net.UnixConn) (*hookd.Request, []*os.File, error) {
	buf := make([]byte, 0, 8192)
	oob := make([]byte, syscall.CmsgSpace(3*4))
	var files []*os.File
	want := -1
	for want < 0 || len(buf) < want {
		if want > cap(buf) {
			buf = slices.Grow(buf, want-len(buf))
		} else if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 8192)
		}
		chunk := buf[len(buf):cap(buf)]
		if want > 0 {
			chunk = chunk[:want-len(buf)]
		}
		n, oobn, _, _, err := c.ReadMsgUnix(chunk, oob)
		if oobn > 0 {
			fs, perr := unixFiles(oob[:oobn])
			files = append(files, fs...)
			if perr != nil {
				return nil, files, perr
			}
		}
		if err != nil {
			return nil, files, err
		}
		if n == 0 {
			return nil, files, io.ErrUnexpectedEOF
		}
		buf = buf[:len(buf)+n]
		if want < 0 && len(buf) >= 8 {
			if want, err = hookd.RequestLen(buf); err != nil {
				return nil, files, err
			}
		}
	}
	if len(files) != 3 {
		return nil, files, fmt.Errorf("hook request with %d descriptors, want 3", len(files))
	}
	req, err := hookd.DecodeRequest(buf)
	return req, files, err
}

// unixFiles returns the descriptors passed in a control message.
func unixFiles(oob []byte) ([]*os.File, error) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var out []*os.File
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			return out, err
		}
		for _, fd := range fds {
			syscall.CloseOnExec(fd)
			out = append(out, os.NewFile(uintptr(fd), "hook"))
		}
	}
	return out, nil
}

// startHookd starts the project's gate daemon, detached, unless one
// answers on the socket or DOCKET_HOOKD=0. The daemon runs with this
// hook's working directory and environment, the ones it answers.
func startHookd() {
	if !hookd.Supported || os.Getenv("DOCKET_HOOKD") == "0" {
		return
	}
	project, err := store.ProjectDir()
	if err != nil {
		return
	}
	path := hookd.SocketPath(project)
	if len(path) > 107 {
		return // no sockaddr_un holds it
	}
	if c, err := net.DialTimeout("unix", path, 100*time.Millisecond); err == nil {
		c.Close()
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	cmd := exec.Command(exe, "hookd")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err == nil {
		cmd.Process.Release()
	}
}

func sortedEnv(env []string) []string {
	env = slices.Clone(env)
	slices.Sort(env)
	return env
}

func mustGetwd() string {
	wd, _ := os.Getwd()
	return wd
}
