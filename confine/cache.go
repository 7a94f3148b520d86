package confine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/store"
)

// CacheDir is the directory, inside the project's .docket, where derived
// confinements are kept (read-only to a confined command, as all of
// .docket is under the default policy).
const CacheDir = "confinement"

// Cached returns the confinement of eng for env and the file that holds
// it: read from dir when a previous call derived it for the same policy
// digest and Env, else derived and written there. Deriving asks the
// policy a few hundred questions (about 0.15 s); reading it back costs a
// file read. A cached file that does not parse is derived again.
func Cached(ctx context.Context, eng *policy.Engine, env Env, dir string) (*Confinement, string, error) {
	key, err := json.Marshal(struct {
		Policy string
		Env    Env
	}{eng.Digest(), env})
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(append([]byte(Construction+"\n"), key...))
	file := filepath.Join(dir, hex.EncodeToString(sum[:16])+".json")
	if data, err := os.ReadFile(file); err == nil {
		if c, err := Parse(data); err == nil && c.Project == filepath.Clean(env.Project) && c.Home == filepath.Clean(env.Home) {
			return c, file, nil
		}
	}
	c, err := Derive(ctx, eng, env)
	if err != nil {
		return nil, "", err
	}
	data, err := c.Canonical()
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("confinement cache: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return nil, "", fmt.Errorf("confinement cache: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil && cerr == nil {
		werr = os.Rename(tmp.Name(), file)
	}
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return nil, "", fmt.Errorf("confinement cache: %v %v", werr, cerr)
	}
	return c, file, nil
}

// Load reads the confinement in file and checks it against digest ("" to
// skip the check): a file changed since the hook named it is refused.
func Load(file, digest string) (*Confinement, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("confinement: %w", err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, err
	}
	if digest != "" {
		got, err := c.Digest()
		if err != nil {
			return nil, err
		}
		if got != digest {
			return nil, fmt.Errorf("confinement %s has digest %s, want %s", file, got, digest)
		}
	}
	return c, nil
}

// ForProject returns the confinement of the project's policy
// (.docket/policy) for the current user and the file that holds it (see
// Cached), with extra trees granted for writing (docket run: the agent's
// own state).
func ForProject(ctx context.Context, project string, extra ...string) (*Confinement, string, error) {
	s := store.Open(project)
	eng, err := policy.LoadDir(s.PolicyDir())
	if err != nil {
		return nil, "", fmt.Errorf("confinement: %w", err)
	}
	env, err := DefaultEnv(project)
	if err != nil {
		return nil, "", err
	}
	env.ToolWrite = append(env.ToolWrite, extra...)
	return Cached(ctx, eng, env, filepath.Join(s.Project(), store.DirName, CacheDir))
}
