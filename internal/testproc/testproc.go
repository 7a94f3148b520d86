// Package testproc runs a server process that tests start themselves (a
// database, an object store): it starts the command with its output in a
// log file, waits until the server answers, and stops it.
package testproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// A Proc is a started server process.
type Proc struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// Start starts cmd with its standard output and error in the file logPath.
func Start(cmd *exec.Cmd, logPath string) (*Proc, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	p := &Proc{cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() { cmd.Wait(); log.Close(); close(p.exited) }()
	return p, nil
}

// Ready waits until ready reports true, checking every 20ms; it fails,
// stopping the process, if the process exits (with the file errLog, the
// process's log if empty) or after a minute.
func (p *Proc) Ready(ready func(context.Context) bool, errLog string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if errLog == "" {
		errLog = p.log
	}
	for {
		if ready(ctx) {
			return nil
		}
		select {
		case <-p.exited:
			b, _ := os.ReadFile(errLog)
			return fmt.Errorf("%s exited at start:\n%s", p.cmd.Path, b)
		case <-ctx.Done():
			p.Stop()
			return errors.New(p.cmd.Path + " did not answer within a minute")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop sends the process SIGTERM and waits for it to exit, killing it
// after 30 seconds.
func (p *Proc) Stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}
