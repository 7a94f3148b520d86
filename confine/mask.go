package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Mask is one path hidden or frozen for a confined command.
type Mask struct {
	Path     string `json:"path"`      // absolute, symlinks resolved
	Dir      bool   `json:"dir"`       // a directory (else a file)
	ReadOnly bool   `json:"read_only"` // readable, not writable (else neither)
}

// MaxScan bounds the entries Masks walks in the project; a larger project
// is refused rather than confined partially.
const MaxScan = 200_000

// skipDirs are not searched for secret names: version-control objects and
// installed packages (their files are written by the package manager, not
// named by the user).
var skipDirs = map[string]bool{".git": true, "node_modules": true}

// Masks returns the existing paths c hides (secrets) or freezes (read-only
// trees) now: the deny paths, the files of the project and of the home
// directory's top level whose names are secret, the project-relative
// denials and read-only trees. Symlinks are resolved, so a mask covers the
// file a link points to.
func (c *Confinement) Masks() ([]Mask, error) {
	var out []Mask
	seen := map[string]bool{}
	add := func(p string, ro bool) {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return // absent or a dangling link: nothing to hide
		}
		fi, err := os.Stat(real)
		if err != nil || seen[real] {
			return
		}
		if !fi.IsDir() && !fi.Mode().IsRegular() {
			ro = false // a device or socket named like a secret: hide it
		}
		seen[real] = true
		out = append(out, Mask{Path: real, Dir: fi.IsDir(), ReadOnly: ro})
	}
	for _, p := range c.DenyPaths {
		add(p, false)
	}
	if ents, err := os.ReadDir(c.Home); err == nil {
		for _, e := range ents {
			if c.SecretName(e.Name()) {
				add(filepath.Join(c.Home, e.Name()), false)
			}
		}
	}
	n := 0
	errTooMany := errors.New("too many files")
	err := filepath.WalkDir(c.Project, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == c.Project {
				return err
			}
			return nil // unreadable: nothing in it can be read confined either
		}
		if n++; n > MaxScan {
			return errTooMany
		}
		if p == c.Project {
			return nil
		}
		rel := strings.ToLower(p[len(c.Project)+1:])
		if c.SecretName(d.Name()) || matchAny(lower(c.DenyRel), rel) {
			add(p, false)
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() && skipDirs[d.Name()] {
			return fs.SkipDir
		}
		return nil
	})
	if errors.Is(err, errTooMany) {
		return nil, fmt.Errorf("project %s has more than %d entries to search for secrets", c.Project, MaxScan)
	}
	if err != nil {
		return nil, fmt.Errorf("searching %s for secrets: %w", c.Project, err)
	}
	for _, r := range c.ReadOnly {
		add(filepath.Join(c.Project, r), true)
	}
	return out, nil
}
