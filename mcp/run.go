package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/docketlog/docket/gate"
	"github.com/docketlog/docket/receipts"
)

// Run starts the server (cfg.Command), relays the client's stdin and
// stdout to it, passes its stderr through, and records the session's start
// and end. When the client closes stdin, the server's stdin is closed; a
// server still running after cfg.Grace gets SIGTERM, and after another
// Grace SIGKILL. The same happens when ctx ends. Run returns the server's
// exit code (128+signal for a server killed by a signal).
func Run(ctx context.Context, cfg Config, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if len(cfg.Command) == 0 {
		return 1, errors.New("mcp: no server command")
	}
	if cfg.Grace <= 0 {
		cfg.Grace = 2 * time.Second
	}
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...)
	cmd.Stderr = stderr
	sin, err := cmd.StdinPipe()
	if err != nil {
		return 1, err
	}
	sout, err := cmd.StdoutPipe()
	if err != nil {
		return 1, err
	}
	r, err := newRelay(cfg, stdout, sin)
	if err != nil {
		return 1, err
	}
	if err := cmd.Start(); err != nil {
		return 1, fmt.Errorf("starting the server: %w", err)
	}
	if _, err := cfg.Gate.Record(gate.Event{HookEvent: receipts.SessionStart, SessionID: cfg.SessionID, Agent: r.agent}); err != nil {
		r.log.Error("mcp: recording the session start", "err", err)
	}
	serverDone := make(chan error, 1)
	go func() { serverDone <- r.serverLoop(sout) }()
	clientDone := make(chan error, 1)
	go func() { clientDone <- r.clientLoop(ctx, stdin) }()

	var relayErr error
	stop := func() {
		sin.Close()
		select {
		case <-serverDone:
			return
		case <-time.After(cfg.Grace):
		}
		r.log.Warn("mcp: server still running after its stdin closed; SIGTERM")
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-serverDone:
			return
		case <-time.After(cfg.Grace):
		}
		r.log.Warn("mcp: server still running after SIGTERM; SIGKILL")
		_ = cmd.Process.Kill()
		<-serverDone
	}
	select {
	case err := <-clientDone:
		relayErr = err
		stop()
	case err := <-serverDone:
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			relayErr = err
		}
		sin.Close()
	case <-ctx.Done():
		relayErr = ctx.Err()
		stop()
	}
	// The server closed its stdout; give it the same grace to exit.
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-time.After(cfg.Grace):
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case werr = <-waited:
		case <-time.After(cfg.Grace):
			_ = cmd.Process.Kill()
			werr = <-waited
		}
	}
	if _, err := cfg.Gate.Record(gate.Event{HookEvent: receipts.SessionEnd, SessionID: cfg.SessionID, Agent: r.agent}); err != nil {
		r.log.Error("mcp: recording the session end", "err", err)
	}
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(werr, &exit):
		code = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case werr != nil:
		return 1, werr
	}
	return code, relayErr
}
