package confine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

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
// file read. A cached file is used only when it parses, is in canonical
// form (so the digest the hook names is that of the bytes docket exec
// reads) and holds what the Env gives (project, home, tool directories);
// any other is derived again and replaced. The rules derived from the
// policy are as trustworthy as the policy itself: both live in .docket,
// which a confined command cannot write.
func Cached(ctx context.Context, eng *policy.Engine, env Env, dir string) (*Confinement, string, error) {
	if eng == nil {
		return nil, "", errors.New("confinement: no policy")
	}
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
		if c, err := Parse(data); err == nil && c.matches(env, data) {
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

// matches reports whether c, read from data, is a cache entry for env:
// canonical, and with env's project, home and tool directories.
func (c *Confinement) matches(env Env, data []byte) bool {
	if c.Project != filepath.Clean(env.Project) || c.Home != filepath.Clean(env.Home) ||
		!slices.Equal(c.ToolWrite, toolWrite(env, c.Project)) {
		return false
	}
	canon, err := c.Canonical()
	return err == nil && bytes.Equal(canon, data)
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
	return ForEngine(ctx, eng, project, extra...)
}

// ForEngine is ForProject with the project's policy already loaded (the
// gate's, which the pre hook has just decided with): the policy is not
// read and parsed a second time, and with the policy unchanged the
// confinement costs one file read.
func ForEngine(ctx context.Context, eng *policy.Engine, project string, extra ...string) (*Confinement, string, error) {
	env, err := DefaultEnv(project)
	if err != nil {
		return nil, "", err
	}
	env.ToolWrite = append(env.ToolWrite, extra...)
	return Cached(ctx, eng, env, filepath.Join(project, store.DirName, CacheDir))
}
