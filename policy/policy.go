// Package policy implements Docket's gate: it turns one agent tool call into
// Cedar requests and decides whether the call may run, as specified in
// DESIGN §4.
//
// A call is normalized by the hook layer into a [Call] carrying a Claude Code
// tool name. [Engine.Decide] maps it to Cedar requests against the agent
// schema shipped with this package ([Schema], schema.cedarschema), all with
// principal Agent::"<client>":
//
//	Read, Write, Edit, MultiEdit, NotebookEdit  Action::"<tool>" on File::"<path>"
//	Glob, Grep, LS                              Action::"<tool>" on File::"<dir>" (and the Grep glob)
//	Bash                                        Action::"Bash" on Tool::"Bash", plus
//	                                            Action::"ExecCommand" on Program::"<name>" per simple command,
//	                                            Action::"Write" / Action::"Read" on File per redirection
//	                                            and per path operand of known programs
//	WebFetch                                    Action::"WebFetch" on URL::"<url>" (parents: Domain chain)
//	mcp__<server>__<tool>                       Action::"mcp__<server>__<tool>" on Tool::"<name>", plus
//	                                            Action::"Read" / Action::"Write" on File and
//	                                            Action::"WebFetch" on URL per file or URL its
//	                                            arguments name (mcpargs.go)
//	anything else                               Action::"<name>" on Tool::"<name>"
//
// Actions are grouped under FileRead, FileWrite, Exec, Network and Mcp, and
// MCP tools under Action::"mcp__<server>". Every request must be allowed;
// any evaluation error (cedar-go skips an erroring policy, so an erroring
// forbid would otherwise stop forbidding), shell parse error, dynamic
// program name, unusable URL or malformed input denies. A forbid policy
// annotated @on_deny("ask") turns its denial into "require_approval" when
// every denial of the call is such a forbid; @reason("…") on a policy gives
// the one-line message.
//
// Paths are cleaned and symlinks resolved in Go before Cedar sees them,
// because Cedar's like operator lets * match "/" and "..". Shell command
// lines are analysed by policy/internal/shell (directories, variables
// assigned in the line, globs, the paths each known program touches); see
// docs/hook.md for what it analyses. A policy is a guard rail, not a
// sandbox: aliases, functions defined in earlier calls, PATH lookups,
// scripts and build files run by allowed programs (make, npm, go
// generate) and symlink races all escape it.
package policy

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	"github.com/cedar-policy/cedar-go/x/exp/schema/validate"
	"github.com/docketlog/docket/receipts"
)

// Default is the default policy that `docket init` installs as
// [DefaultName]. It is meant to be kept and edited.
//
//go:embed docket.cedar
var Default []byte

// DefaultName is the file name of [Default].
const DefaultName = "docket.cedar"

// LoadDefault loads [Default].
func LoadDefault() (*Engine, error) {
	return Load(File{Name: DefaultName, Data: Default})
}

// File is one Cedar policy file: its name (used in error positions and in
// the policy digest) and its exact bytes.
type File = receipts.PolicyFile

// Engine is a loaded, validated policy set. It is safe for concurrent use
// by multiple goroutines; it is never modified after Load returns.
type Engine struct {
	files     []File
	set       *cedar.PolicySet
	ids       []string                // policy ids in file order
	ask       map[cedar.PolicyID]bool // forbids annotated @on_deny("ask")
	digest    string
	validator *validate.Validator // nil when loaded with a validated digest
	actions   actionTable
	extra     []string // actions referenced by policies but not in the base schema
	// byAction holds, per known action, the policies whose action scope
	// can match it; a policy left out would evaluate to false without error.
	byAction map[types.EntityUID]policySubset
}

// actionLiterals returns the names in the action literals of a policy
// text, each Action :: "name" with name in [A-Za-z0-9_.:-]+ and any RE2
// white space (\s: tab, newline, form feed, carriage return, space) around
// the "::": what FindAllSubmatch of the regular expression
// Action\s*::\s*"([A-Za-z0-9_.:-]+)" finds (FuzzActionLiterals holds the
// two equal). Written out because compiling and running that expression
// took a tenth of a hook process's policy loading.
func actionLiterals(data []byte) []string {
	var out []string
	const word = "Action"
	for i := 0; ; {
		j := bytes.Index(data[i:], []byte(word))
		if j < 0 {
			return out
		}
		start := i + j
		if name, end, ok := actionLiteralAt(data, start+len(word)); ok {
			out = append(out, name)
			i = end
		} else {
			i = start + 1
		}
	}
}

// actionLiteralAt matches \s*::\s*"([A-Za-z0-9_.:-]+)" at data[i:] and
// returns the name and the end of the match.
func actionLiteralAt(data []byte, i int) (string, int, bool) {
	space := func() {
		for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\f' || data[i] == '\r') {
			i++
		}
	}
	space()
	if !bytes.HasPrefix(data[i:], []byte("::")) {
		return "", 0, false
	}
	i += 2
	space()
	if i >= len(data) || data[i] != '"' {
		return "", 0, false
	}
	i++
	start := i
	for i < len(data) && actionNameByte(data[i]) {
		i++
	}
	if i == start || i >= len(data) || data[i] != '"' {
		return "", 0, false
	}
	return string(data[start:i]), i + 1, true
}

func actionNameByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-'
}

var parseErrRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`parse error at <input>:(\d+):(\d+)\s*(.*)`)
})

// Load parses and validates the given policy files. Every policy must carry
// a unique @id annotation; files must contain at least one policy in total.
// Policies are validated against the agent schema; actions they name that
// the schema does not declare are treated as tools (verbatim MCP names are
// placed under Mcp and their server group).
func Load(files ...File) (*Engine, error) {
	return Options{}.Load(files...)
}

// Options adjusts how policies are loaded.
type Options struct {
	// ValidatedDigest is the acta-policy-digest-v1 digest of a policy set
	// already validated against the schema, for example by `docket policy
	// check` when it was installed. When it equals the digest of the files
	// being loaded, the (comparatively slow) schema parsing and validation
	// are skipped: policies and per-call requests are not validated, while
	// parsing and @id checks still run and evaluation errors still deny.
	// Record the digest only after a full Load succeeded with the same
	// [Schema].
	ValidatedDigest string
}

// Load is like the package-level [Load] with options.
func (o Options) Load(files ...File) (*Engine, error) {
	if len(files) == 0 {
		return nil, errors.New("no policy files")
	}
	e := &Engine{
		set: cedar.NewPolicySet(),
		ask: make(map[cedar.PolicyID]bool),
	}
	type entry = policyEntry
	var all []entry
	seen := make(map[cedar.PolicyID]string)
	names := make(map[string]bool)
	for _, f := range files {
		if f.Name == "" || names[f.Name] {
			return nil, fmt.Errorf("policy file name %q is empty or repeated", f.Name)
		}
		names[f.Name] = true
		e.files = append(e.files, File{Name: f.Name, Data: slices.Clone(f.Data)})
		list, err := cedar.NewPolicyListFromBytes(f.Name, f.Data)
		if err != nil {
			if m := parseErrRE().FindStringSubmatch(err.Error()); m != nil {
				return nil, fmt.Errorf("%s:%s:%s: parse error: %s", f.Name, m[1], m[2], m[3])
			}
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		for _, p := range list {
			pos := p.Position()
			where := fmt.Sprintf("%s:%d:%d", f.Name, pos.Line, pos.Column)
			ann := p.Annotations()
			id, ok := ann["id"]
			if !ok || strings.TrimSpace(string(id)) == "" {
				return nil, fmt.Errorf("%s: policy has no @id annotation", where)
			}
			pid := cedar.PolicyID(id)
			if prev, dup := seen[pid]; dup {
				return nil, fmt.Errorf("%s: duplicate policy id %q (first at %s)", where, id, prev)
			}
			seen[pid] = where
			if v, ok := ann["on_deny"]; ok {
				switch {
				case v != "ask" && v != "deny":
					return nil, fmt.Errorf("%s: policy %q: @on_deny must be \"ask\" or \"deny\", not %q", where, id, v)
				case v == "ask" && p.Effect() != cedar.Forbid:
					return nil, fmt.Errorf("%s: policy %q: @on_deny(\"ask\") only applies to forbid policies", where, id)
				case v == "ask":
					e.ask[pid] = true
				}
			}
			all = append(all, entry{pid, p})
		}
	}
	if len(all) == 0 {
		return nil, errors.New("policy files contain no policies")
	}
	var refs []string
	for _, en := range all {
		refs = append(refs, referencedActions(en.pol)...)
	}
	// Actions named in conditions (`action in [Action::"mcp__github"]`).
	for _, f := range files {
		for _, name := range actionLiterals(f.Data) {
			if safeActionName(name) {
				refs = append(refs, name)
			}
		}
	}
	var err error
	if e.digest, err = receipts.PolicyDigest(e.files); err != nil {
		return nil, err
	}
	skip := o.ValidatedDigest != "" && o.ValidatedDigest == e.digest
	if skip {
		// No schema parsing at all: the action hierarchy is known.
		if e.actions, e.extra, err = quickActions(refs); err != nil {
			return nil, err
		}
	} else {
		sch, err := buildSchema(refs)
		if err != nil {
			return nil, err
		}
		e.validator = sch.validator
		e.actions = sch.actions
		e.extra = sch.extra
	}
	var verrs []error
	for _, en := range all {
		if skip {
			// Validated when the digest was recorded.
		} else if err := e.validator.Policy(string(en.id), policyAST(en.pol)); err != nil {
			pos := en.pol.Position()
			verrs = append(verrs, fmt.Errorf("%s:%d:%d: policy %q does not match the agent schema: %v",
				pos.Filename, pos.Line, pos.Column, en.id, oneLine(err.Error())))
		}
		e.set.Add(en.id, en.pol)
		e.ids = append(e.ids, string(en.id))
	}
	if len(verrs) > 0 {
		return nil, errors.Join(verrs...)
	}
	e.byAction = make(map[types.EntityUID]policySubset, len(e.actions))
	for uid := range e.actions {
		anc := e.actions.ancestors(uid)
		var sub policySubset
		for _, en := range all {
			if scopeMayMatch(policyAST(en.pol).Action, uid, anc) {
				sub = append(sub, en)
			}
		}
		e.byAction[uid] = sub
	}
	return e, nil
}

// LoadFiles reads and loads the named policy files. The file name recorded
// for each (in errors and in [Engine.Files]) is its base name.
func LoadFiles(paths ...string) (*Engine, error) {
	return Options{}.LoadFiles(paths...)
}

// LoadFiles is like the package-level [LoadFiles] with options.
func (o Options) LoadFiles(paths ...string) (*Engine, error) {
	var files []File
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading policy: %w", err)
		}
		files = append(files, File{Name: filepath.Base(p), Data: b})
	}
	return o.Load(files...)
}

// LoadDir loads every *.cedar file directly inside dir, in name order.
func LoadDir(dir string) (*Engine, error) {
	return Options{}.LoadDir(dir)
}

// LoadDir is like the package-level [LoadDir] with options.
func (o Options) LoadDir(dir string) (*Engine, error) {
	files, err := ReadDir(dir)
	if err != nil {
		return nil, err
	}
	return o.Load(files...)
}

// ReadDir reads every *.cedar file directly inside dir, in name order: the
// files LoadDir loads.
func ReadDir(dir string) ([]File, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading policy directory: %w", err)
	}
	var files []File
	for _, de := range ents {
		if de.Type()&fs.ModeType == fs.ModeDir || !strings.HasSuffix(de.Name(), ".cedar") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading policy: %w", err)
		}
		files = append(files, File{Name: de.Name(), Data: b})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .cedar files in %s", dir)
	}
	return files, nil
}

// Reason returns the @reason annotation of the policy with the given ID,
// "" when the policy has none or no policy has that ID.
func (e *Engine) Reason(id string) string {
	if p := e.set.Get(cedar.PolicyID(id)); p != nil {
		return oneLine(string(p.Annotations()["reason"]))
	}
	return ""
}

// Files returns the loaded policy files (name and exact bytes), the input of
// the acta-policy-digest-v1 computation (DESIGN §3.2).
func (e *Engine) Files() []File {
	out := make([]File, len(e.files))
	for i, f := range e.files {
		out[i] = File{Name: f.Name, Data: slices.Clone(f.Data)}
	}
	return out
}

// SameFiles reports whether files are exactly the engine's files: the same
// names with the same bytes, in the same order.
func (e *Engine) SameFiles(files []File) bool {
	return slices.EqualFunc(e.files, files, func(a, b File) bool {
		return a.Name == b.Name && bytes.Equal(a.Data, b.Data)
	})
}

// Digest returns the acta-policy-digest-v1 digest of the loaded files
// ("sha256:<hex>"), recorded in every decision receipt.
func (e *Engine) Digest() string {
	return e.digest
}

// Summary describes a loaded policy set, for `docket policy check`.
type Summary struct {
	Digest   string   `json:"policy_digest"`
	Files    []string `json:"files"`
	Policies []string `json:"policies"` // policy ids in file order
	Permits  int      `json:"permits"`
	Forbids  int      `json:"forbids"`
	Ask      []string `json:"ask,omitempty"` // forbids annotated @on_deny("ask")
	// UndeclaredActions lists actions the policies name that the schema does
	// not declare; they are treated as tools. A typo in a tool name shows up
	// here. MCP actions (mcp__SERVER, mcp__SERVER__TOOL) are not listed: a
	// server's name is the user's to choose, and naming one declares it.
	UndeclaredActions []string `json:"undeclared_actions,omitempty"`
}

// Check summarizes the loaded policy set. Loading already validated it.
func (e *Engine) Check() Summary {
	s := Summary{Digest: e.digest, Policies: slices.Clone(e.ids)}
	for _, a := range e.extra {
		if _, _, isMCP := splitMCP(a); !isMCP {
			s.UndeclaredActions = append(s.UndeclaredActions, a)
		}
	}
	for _, f := range e.files {
		s.Files = append(s.Files, f.Name)
	}
	for _, id := range e.ids {
		p := e.set.Get(cedar.PolicyID(id))
		if p.Effect() == cedar.Forbid {
			s.Forbids++
		} else {
			s.Permits++
		}
		if e.ask[cedar.PolicyID(id)] {
			s.Ask = append(s.Ask, id)
		}
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
