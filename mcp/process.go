package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/receipts"
)

// Run starts the server (cfg.Command) in its own process group, relays
// the client's stdin and stdout to it, passes its stderr through, and
// records the session's start and end. When the client closes stdin, or
// ctx ends, the server is stopped (stopProcess). Run returns the server's
// exit code (128+signal for a server killed by a signal). The session_end
// is signed whatever happens once the session_start is.
func Run(ctx context.Context, cfg Config, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(cfg.Command) == 0 {
		return 1, errors.New("mcp: no server command")
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 2 * time.Second
	}
	p, err := startServer(cfg.Command, stderr, cfg.Grace)
	if err != nil {
		return 1, err
	}
	r, err := newRelay(cfg, stdout, p.stdin)
	if err != nil {
		p.kill()
		return 1, err
	}
	// The session's files stay open for its appends (store.Appender):
	// each call appends two receipts. A session held elsewhere in this
	// process is appended to file by file, as a hook does.
	if a, err := cfg.Gate.Store().Hold(cfg.SessionID); err == nil {
		defer a.Close()
	}
	if _, err := cfg.Gate.Record(ctx, gate.Event{HookEvent: receipts.SessionStart, SessionID: cfg.SessionID, Agent: r.agent}); err != nil {
		r.log.Error("mcp: recording the session start", "err", err)
	} else if cfg.Appended != nil {
		cfg.Appended()
	}
	go func() { p.outDone <- r.serverLoop(p.stdout) }()
	clientDone := make(chan error, 1)
	go func() { clientDone <- r.clientLoop(ctx, stdin) }()

	var relayErr error
	select {
	case relayErr = <-clientDone:
	case err := <-p.outDone:
		p.outDone <- err // for stopProcess
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			relayErr = err
		}
	case <-ctx.Done():
		relayErr = ctx.Err()
	}
	code, werr := p.stopProcess(cfg.Grace, r.log)
	r.end()
	if _, err := cfg.Gate.Record(ctx, gate.Event{HookEvent: receipts.SessionEnd, SessionID: cfg.SessionID, Agent: r.agent}); err != nil {
		r.log.Error("mcp: recording the session end", "err", err)
	}
	if werr != nil {
		return 1, werr
	}
	return code, relayErr
}

// server is the server's process, in its own process group, and our ends
// of its stdin and stdout.
type server struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	// exited receives the process's wait status once; outDone the server
	// loop's end, once the server's stdout ended.
	exited  chan error
	outDone chan error
}

// startServer starts argv with pipes for its stdin and stdout that the
// relay owns (exec.Cmd does not close them when the process exits, so
// nothing the server wrote is lost), in a new process group.
func startServer(argv []string, stderr io.Writer, grace time.Duration) (*server, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A child that keeps a stderr the relay copies must not hold Wait.
	cmd.WaitDelay = grace
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting the server: %w", err)
	}
	p := &server{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan error, 1), outDone: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	return p, nil
}

// signal sends sig to the server's process group.
func (p *server) signal(sig syscall.Signal) {
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

// kill ends a server the relay could not start relaying for.
func (p *server) kill() {
	p.signal(syscall.SIGKILL)
	p.stdin.Close()
	p.stdout.Close()
	<-p.exited
}

// stopProcess ends the server and returns its exit code: its stdin is closed; a
// server still running after grace gets SIGTERM, after another grace
// SIGKILL, both sent to its process group (a wrapper such as sh -c, npx or
// uvx leaves its children there). "Running" means the process has not
// exited or its stdout has not ended, which a child holding it delays.
// The wait after SIGKILL is bounded too: the relay then stops reading the
// server's stdout (a process outside the group may still hold it), and,
// should the process itself not be reaped, gives up on its status. Once
// stopProcess returns, the server loop has ended.
func (p *server) stopProcess(grace time.Duration, log *slog.Logger) (int, error) {
	p.stdin.Close()
	var status error
	exited, outEnded := false, false
	wait := func() bool {
		t := time.NewTimer(grace)
		defer t.Stop()
		for !exited || !outEnded {
			select {
			case status = <-p.exited:
				exited = true
			case <-p.outDone:
				outEnded = true
			case <-t.C:
				return false
			}
		}
		return true
	}
	if !wait() {
		log.Warn("mcp: server still running after its stdin closed; SIGTERM to its process group")
		p.signal(syscall.SIGTERM)
		if !wait() {
			log.Warn("mcp: server still running after SIGTERM; SIGKILL to its process group")
			p.signal(syscall.SIGKILL)
			if !wait() {
				log.Warn("mcp: the server's stdout is still open after SIGKILL (a process outside its group holds it); no longer reading it")
				p.stdout.Close()
				if !outEnded {
					<-p.outDone
					outEnded = true
				}
				if !exited && !wait() {
					return 1, errors.New("the server did not exit after SIGKILL")
				}
			}
		}
	}
	p.stdout.Close()
	var exit *exec.ExitError
	switch {
	case status == nil, errors.Is(status, exec.ErrWaitDelay):
		return 0, nil
	case errors.As(status, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return exit.ExitCode(), nil
	}
	return 1, status
}
