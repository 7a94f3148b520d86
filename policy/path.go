package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cedar-policy/cedar-go/types"
)

// maxPathLen bounds one path (PATH_MAX on Linux).
const maxPathLen = 4096

const (
	fileType      = types.EntityType("File")
	directoryType = types.EntityType("Directory")
)

// absPath resolves p the way a tool would: "~" and "~/…" against home,
// relative paths against cwd; the result is cleaned.
func (x *callEnv) absPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	if len(p) > maxPathLen {
		return "", fmt.Errorf("path longer than %d bytes", maxPathLen)
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if x.home == "" {
			return "", fmt.Errorf("path %q needs a home directory", p)
		}
		p = x.home + "/" + p[1:]
	} else if strings.HasPrefix(p, "~") {
		return "", fmt.Errorf("path %q: ~user is not supported", p)
	}
	if !filepath.IsAbs(p) {
		if x.cwd == "" {
			return "", fmt.Errorf("relative path %q without a working directory", p)
		}
		p = x.cwd + "/" + p
	}
	return x.links.kernelClean(p), nil
}

// kernelClean cleans an absolute path the way the kernel walks it: ".."
// is the parent of what the path so far resolves to, symlinks followed,
// not the parent as text (src/link/../x is the link target's sibling x).
// Without ".." components it is filepath.Clean.
func (r *resolver) kernelClean(p string) string {
	parts := strings.Split(p, "/")
	if !slices.Contains(parts, "..") {
		return filepath.Clean(p)
	}
	cur := "/"
	for _, c := range parts {
		switch c {
		case "", ".":
		case "..":
			cur = filepath.Dir(r.real(cur, 0))
		default:
			cur = filepath.Join(cur, c)
		}
	}
	return cur
}

// realPath resolves every existing symlink in the clean absolute path p,
// including a dangling final link, and keeps the non-existent rest as is.
func realPath(p string) string {
	return (&resolver{}).real(p, 0)
}

// resolver resolves symlinks one path component at a time, remembering
// what it resolved for the paths of one call.
type resolver struct {
	cache map[string]string
}

func (r *resolver) real(p string, depth int) string {
	if p == "/" || p == "." || p == "" {
		return p
	}
	if v, ok := r.cache[p]; ok {
		return v
	}
	if depth > 40 {
		return p // a symlink loop: leave the rest unresolved
	}
	dir, base := filepath.Split(p)
	rd := r.real(filepath.Clean(dir), depth+1)
	q := filepath.Join(rd, base)
	if fi, err := os.Lstat(q); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if t, err := os.Readlink(q); err == nil {
			if !filepath.IsAbs(t) {
				t = filepath.Join(rd, t)
			}
			q = r.real(filepath.Clean(t), depth+1)
		}
	}
	if r.cache == nil {
		r.cache = make(map[string]string)
	}
	r.cache[p] = q
	return q
}

// within reports whether the clean absolute path p is root or below it.
func within(p, root string) bool {
	if root == "" {
		return false
	}
	if root == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

// dirParents adds Directory::"<d>" for p itself and each of its ancestors,
// plus the "~"-rooted aliases when p is under home.
func dirParents(add func(types.EntityUID), p, home string) {
	for d := p; ; {
		add(types.NewEntityUID(directoryType, types.String(d)))
		next := filepath.Dir(d)
		if next == d {
			break
		}
		d = next
	}
	if home != "" && home != "/" && within(p, home) {
		rel := "~" + p[len(home):]
		for d := rel; ; {
			add(types.NewEntityUID(directoryType, types.String(d)))
			i := strings.LastIndexByte(d, '/')
			if i < 0 {
				break
			}
			d = d[:i]
		}
	}
}

// fileEntity builds (and records) the File entity for a path argument.
func (x *callEnv) fileEntity(p string) (types.EntityUID, error) {
	abs, err := x.absPath(p)
	if err != nil {
		return types.EntityUID{}, err
	}
	uid := types.NewEntityUID(fileType, types.String(abs))
	if _, ok := x.ents[uid]; ok {
		return uid, nil
	}
	if !x.resolved {
		x.resolved = true
		if x.project != "" {
			x.realProject = x.links.real(x.project, 0)
		}
		if x.home != "" {
			x.realHome = x.links.real(x.home, 0)
		}
	}
	real := x.links.real(abs, 0)
	var parents []types.EntityUID
	seen := make(map[types.EntityUID]bool)
	add := func(u types.EntityUID) {
		if !seen[u] {
			seen[u] = true
			parents = append(parents, u)
		}
	}
	dirParents(add, abs, x.home)
	if real != abs {
		dirParents(add, real, x.realHome)
	}
	inProject := within(abs, x.project) && within(real, x.realProject)
	rel := ""
	if inProject {
		// From the real path: a symlink "x" to ".docket" is ".docket".
		if r, err := filepath.Rel(x.realProject, real); err == nil {
			rel = r
		}
	}
	name := filepath.Base(abs)
	x.ents[uid] = types.Entity{
		UID:     uid,
		Parents: types.NewEntityUIDSet(parents...),
		Attributes: types.NewRecord(types.RecordMap{
			"path":       types.String(abs),
			"name":       types.String(name),
			"ext":        types.String(filepath.Ext(name)),
			"real_path":  types.String(real),
			"real_name":  types.String(filepath.Base(real)),
			"in_project": types.Boolean(inProject),
			"rel_path":   types.String(rel),

			"name_lower":      types.String(strings.ToLower(name)),
			"real_name_lower": types.String(strings.ToLower(filepath.Base(real))),
			"rel_path_lower":  types.String(strings.ToLower(rel)),
		}),
	}
	return uid, nil
}
