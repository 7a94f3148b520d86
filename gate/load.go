package gate

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/receipts"
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
func LoadPolicy(s *store.Store) (*policy.Engine, error) {
	var o policy.Options
	mark, _ := os.ReadFile(s.PolicyValidatedPath())
	if digest, schema, ok := strings.Cut(strings.TrimSpace(string(mark)), " "); ok && schema == schemaHash {
		o.ValidatedDigest = digest
	}
	eng, err := o.LoadDir(s.PolicyDir())
	if err == nil && eng.Digest() != o.ValidatedDigest {
		// Best effort: without the record the next load validates again.
		_ = os.WriteFile(s.PolicyValidatedPath(), []byte(eng.Digest()+" "+schemaHash+"\n"), 0o600)
	}
	return eng, err
}

// Prepared is the slow part of opening a gate, loading the policy and the
// issuer key, running in the background; see [Prepare].
type Prepared struct {
	store  *store.Store
	policy chan loadedPolicy
	key    chan loadedKey
	config chan loadedConfig
}

type loadedConfig struct {
	cfg store.Config
	err error
}

type loadedPolicy struct {
	eng *policy.Engine
	err error
}

type loadedKey struct {
	key ed25519.PrivateKey
	err error
}

// Prepare starts loading the store's policy and issuer key, each on its own
// goroutine, and its configuration after the key. A process that will decide a call calls it as early as it
// knows the project, so that the loads overlap everything else it does
// before deciding. A panic while loading becomes an error.
func Prepare(s *store.Store) *Prepared {
	p := &Prepared{store: s, policy: make(chan loadedPolicy, 1), key: make(chan loadedKey, 1), config: make(chan loadedConfig, 1)}
	go func() {
		defer func() {
			if r := recover(); r != nil {
				p.policy <- loadedPolicy{err: fmt.Errorf("panic loading policy: %.200v", r)}
			}
		}()
		eng, err := LoadPolicy(s)
		p.policy <- loadedPolicy{eng, err}
	}()
	go func() {
		sentKey := false
		defer func() {
			if r := recover(); r != nil {
				err := fmt.Errorf("panic loading the key or the configuration: %.200v", r)
				if !sentKey {
					p.key <- loadedKey{err: err}
				}
				p.config <- loadedConfig{err: err}
			}
		}()
		key, err := receipts.LoadPrivateKey(s.KeyPath())
		p.key <- loadedKey{key, err}
		sentKey = true
		cfg, err := s.LoadConfig()
		p.config <- loadedConfig{cfg, err}
	}()
	return p
}

// Store returns the store being loaded.
func (p *Prepared) Store() *store.Store { return p.store }

// Key waits for the issuer key, or for ctx to end.
func (p *Prepared) Key(ctx context.Context) (ed25519.PrivateKey, error) {
	select {
	case k := <-p.key:
		p.key <- k // for the next caller
		return k.key, k.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Config waits for the store's configuration, or for ctx to end.
func (p *Prepared) Config(ctx context.Context) (store.Config, error) {
	select {
	case c := <-p.config:
		p.config <- c
		return c.cfg, c.err
	case <-ctx.Done():
		return store.Config{}, ctx.Err()
	}
}

// Policy waits for the policy, or for ctx to end.
func (p *Prepared) Policy(ctx context.Context) (*policy.Engine, error) {
	select {
	case l := <-p.policy:
		p.policy <- l
		return l.eng, l.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
