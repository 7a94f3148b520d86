package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/sumdb/note"
	"k8s.io/klog/v2"

	"github.com/docketlog/docket/c2sp"
	dlog "github.com/docketlog/docket/log"
	"github.com/docketlog/docket/log/posix"
	"github.com/docketlog/docket/witness"
)

// servers are the demo's log and witnesses, running in this process.
type servers struct {
	logURL, logVKey, policyPath, witnessURL string

	log     *dlog.Log
	storage *posix.Storage
	wits    []*witness.Witness
	https   []*http.Server
	logFile *os.File
}

// startServers starts three witnesses and a log whose checkpoints need the
// cosignatures of two of them, each an http.Server on a loopback port of
// this process, the log on Tessera's POSIX storage in the demo directory.
// What they log goes to servers.log there.
func (d *demoRun) startServers(ctx context.Context) (_ *servers, err error) {
	s := &servers{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.logFile, err = os.Create(filepath.Join(d.dir, "servers.log")); err != nil {
		return nil, err
	}
	logger := slog.New(slog.NewTextHandler(s.logFile, nil))
	// Tessera reports through klog: into the file too, not the demo's
	// output.
	klog.SetSlogLogger(logger)

	listen := func() (net.Listener, string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, "", err
		}
		return ln, "http://" + ln.Addr().String(), nil
	}
	logLn, logURL, err := listen()
	if err != nil {
		return nil, err
	}
	lskey, lvkey, err := c2sp.GenerateKey("log.demo.example/docket")
	if err != nil {
		logLn.Close()
		return nil, err
	}
	policy := fmt.Sprintf("log %s %s\n", lvkey, logURL)
	type wit struct {
		name, cosig, url string
		ln               net.Listener
		signer           note.Signer
	}
	var ws []wit
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("w%d", i)
		wskey, _, err := c2sp.GenerateKey(name + ".witness.demo.example")
		if err != nil {
			return nil, err
		}
		signer, cosig, err := c2sp.NewCosigner(wskey)
		if err != nil {
			return nil, err
		}
		ln, url, err := listen()
		if err != nil {
			return nil, err
		}
		ws = append(ws, wit{name, cosig, url, ln, signer})
		policy += fmt.Sprintf("witness %s %s %s\n", name, cosig, url)
	}
	policy += "group g 2 w1 w2 w3\nquorum g\n"
	s.policyPath = filepath.Join(d.dir, "witnesses.policy")
	if err := os.WriteFile(s.policyPath, []byte(policy), 0o644); err != nil {
		return nil, err
	}
	logs, err := witness.ParseLogs([]byte(policy))
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		wt, err := witness.New(witness.Config{Signer: w.signer, DBPath: filepath.Join(d.dir, w.name+".db"), Logs: logs, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("witness %s: %w", w.name, err)
		}
		s.wits = append(s.wits, wt)
		s.serve(w.ln, wt)
		d.say("witness %s  %s  cosignature key %s", w.name, w.url, truncateKey(w.cosig))
	}
	s.witnessURL = ws[0].url

	signer, vkey, err := c2sp.NewSigner(lskey)
	if err != nil {
		return nil, err
	}
	if s.storage, err = posix.Open(ctx, filepath.Join(d.dir, "log-data"), &http.Client{Timeout: 2 * time.Second}, logger); err != nil {
		return nil, err
	}
	if s.log, err = dlog.New(ctx, dlog.Config{Driver: s.storage.Driver, Index: s.storage.Index, Probe: s.storage.Probe, Cleanup: s.storage.Cleanup,
		Signer: signer, VKey: vkey, WitnessPolicy: []byte(policy), Logger: logger}); err != nil {
		return nil, err
	}
	s.serve(logLn, s.log.Handler())
	if err := waitHTTP(ctx, logURL+"/checkpoint"); err != nil {
		return nil, err
	}
	s.logURL, s.logVKey = logURL, vkey
	d.say("log        %s  log key %s", logURL, truncateKey(vkey))
	d.say("witness policy    group g 2 w1 w2 w3; quorum g: a checkpoint is published only once two of the three witnesses cosigned it")
	return s, nil
}

// serve serves h on ln until close.
func (s *servers) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	s.https = append(s.https, srv)
	go srv.Serve(ln)
}

// close stops the servers: HTTP first, then the log, its storage and the
// witnesses' databases.
func (s *servers) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, srv := range s.https {
		errs = append(errs, srv.Shutdown(ctx))
	}
	if s.log != nil {
		errs = append(errs, s.log.Close(ctx))
	}
	if s.storage != nil {
		errs = append(errs, s.storage.Close())
	}
	for _, w := range s.wits {
		errs = append(errs, w.Close())
	}
	if s.logFile != nil {
		errs = append(errs, s.logFile.Close())
	}
	return errors.Join(errs...)
}
