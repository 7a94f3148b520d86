package gate

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/docketlog/docket/internal/stackgrow"
	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/store"
)

// schemaHash identifies the agent schema policies are validated against.
var schemaHash = func() string {
	sum := sha256.Sum256(policy.Schema)
	return "sha256:" + hex.EncodeToString(sum[:])
}()

// LoadPolicy loads the store's policy: every *.cedar file directly in its
// policy directory, in name order. Validating the policies against the
// schema is the slowest part of loading them, so a policy set already
// validated against this schema (recorded in the store by a previous load)
// is not validated again, and neither are the requests built for it (Docket
// builds them to the schema itself). Parsing, @id checks and deny-on-error
// still run every time, so a policy that errors still denies.
//
// The files are read for every load; a process that loads the same files
// again (the gate daemon, docket hookd, for each call) gets the engine it
// parsed from them before: the parse is the cost, and the engine is
// immutable.
func LoadPolicy(s *store.Store) (*policy.Engine, error) {
	files, err := policy.ReadDir(s.PolicyDir())
	if err != nil {
		return nil, err
	}
	if eng := parsed.get(files); eng != nil {
		return eng, nil
	}
	var o policy.Options
	mark := s.PolicyValidated()
	if digest, schema, ok := strings.Cut(strings.TrimSpace(string(mark)), " "); ok && schema == schemaHash {
		o.ValidatedDigest = digest
	}
	eng, err := o.Load(files...)
	if err != nil {
		return nil, err
	}
	if eng.Digest() != o.ValidatedDigest {
		// Best effort: without the record the next load validates again.
		_ = s.SetPolicyValidated([]byte(eng.Digest() + " " + schemaHash + "\n"))
	}
	parsed.put(eng)
	return eng, nil
}

// parsed is the last policy this process loaded.
var parsed policyCache

// policyCache holds one loaded engine, found again by the exact bytes and
// names of its files (what its digest covers). A policy that did not load
// is never kept: it is parsed, and refused, again.
type policyCache struct {
	mu  sync.Mutex // guards eng
	eng *policy.Engine
}

func (c *policyCache) get(files []policy.File) *policy.Engine {
	c.mu.Lock()
	eng := c.eng
	c.mu.Unlock()
	if eng == nil || !eng.SameFiles(files) {
		return nil
	}
	return eng
}

func (c *policyCache) put(eng *policy.Engine) {
	c.mu.Lock()
	c.eng = eng
	c.mu.Unlock()
}

// Options configure [Open]. The zero Options are those of a hook.
type Options struct {
	// Caller names the gate's user in the message of the deny the strict
	// mode signs when the log did not answer before the caller's deadline:
	// "hook" when empty; the MCP relay says "MCP relay".
	Caller string
	// Home is the user's home directory, for "~" in policies; "" means
	// os.UserHomeDir (and no home when there is none). Tests set it.
	Home string
	// Store, if set, is the store of the project rooted at dir, opened
	// by the caller, through which the gate appends: a process that
	// opens a gate per call (the gate daemon) keeps one Store, whose
	// sessions stay held between calls (store.HoldRecent). Nil opens it.
	Store *store.Store
}

// Open opens the gate of the project rooted at dir: its issuer key, its
// configuration and its policy, in the project's .docket store. It is the
// one way to get a gate; the package comment says which failures are
// errors and which deny.
//
// Open returns once the key and the configuration are read. Loading the
// policy (parsing Cedar) is the slow part and only deciding needs it: it
// starts at the first Decide, Preview or PolicyError, or earlier on its own
// goroutine when the caller calls Preload, so that a caller that will
// decide overlaps it with the rest of its work; a gate that only records
// executions never parses the policy. Open's error is a key that cannot be
// loaded, or ctx ending first.
func Open(ctx context.Context, dir string, opts Options) (*Gate, error) {
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	s := opts.Store
	if s == nil {
		s = store.Open(dir)
	}
	g := &Gate{store: s, home: opts.Home, caller: opts.Caller, loaded: make(chan struct{})}
	if g.caller == "" {
		g.caller = "hook"
	}
	if g.home == "" {
		g.home, _ = os.UserHomeDir()
	}
	type loadedKey struct {
		key ed25519.PrivateKey
		err error
	}
	keyc := make(chan loadedKey, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				keyc <- loadedKey{err: fmt.Errorf("panic loading the key or the configuration: %.200v", r)}
			}
		}()
		key, err := s.Key()
		if err != nil {
			keyc <- loadedKey{err: err}
			return
		}
		// A configuration that cannot be read cannot say the strict mode
		// is off: it is on, and an allow then waits for a log that
		// cannot be reached, which denies.
		cfg, err := s.Config()
		g.requireLog, g.configErr = cfg.RequireLog || err != nil, err
		g.observe, g.journal = cfg.Observe, cfg.Journal
		g.salted = cfg.InputCommitment == store.CommitSalted
		keyc <- loadedKey{key: key}
	}()
	select {
	case k := <-keyc:
		if k.err != nil {
			return nil, fmt.Errorf("issuer key: %w", k.err)
		}
		g.key = k.key
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return g, nil
}

// Preload starts loading the policy on its own goroutine, if it has not
// started yet, so that a later Decide finds it loaded. It does not wait.
func (g *Gate) Preload() {
	g.loadOnce.Do(func() {
		go func() {
			stackgrow.Grow() // the Cedar parser recurses
			defer close(g.loaded)
			defer func() {
				if r := recover(); r != nil {
					g.engine, g.policyErr = nil, fmt.Errorf("panic loading policy: %.200v", r)
				}
			}()
			g.engine, g.policyErr = LoadPolicy(g.store)
		}()
	})
}

// policy loads the policy (see Preload) and waits for it, or for ctx to
// end.
func (g *Gate) policy(ctx context.Context) (*policy.Engine, error) {
	g.Preload()
	select {
	case <-g.loaded:
		return g.engine, g.policyErr
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Policy waits for the policy to be loaded (see Preload) and returns it,
// the one a Decide of this gate decided with, or why it could not be
// loaded, or ctx's error when it ended first. The pre hook derives the
// confinement of a call it allowed from it rather than loading the
// policy again.
func (g *Gate) Policy(ctx context.Context) (*policy.Engine, error) {
	eng, err := g.policy(ctx)
	if err == nil && eng == nil {
		err = errors.New("no policy loaded")
	}
	return eng, err
}

// PolicyError waits for the policy to be loaded and returns why it could
// not be, when every call is denied, or ctx's error when it ended first.
func (g *Gate) PolicyError(ctx context.Context) error {
	_, err := g.policy(ctx)
	return err
}

// ConfigError returns why the project's configuration could not be read,
// or nil. The gate is then in strict mode.
func (g *Gate) ConfigError() error { return g.configErr }

// Store returns the project's store.
func (g *Gate) Store() *store.Store { return g.store }

// PublicKey returns the public key of the issuer key the gate signs with.
func (g *Gate) PublicKey() ed25519.PublicKey { return g.key.Public().(ed25519.PublicKey) }
