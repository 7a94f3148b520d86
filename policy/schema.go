package policy

import (
	_ "embed"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"

	cedar "github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/cedar-policy/cedar-go/x/exp/schema/resolved"
	"github.com/cedar-policy/cedar-go/x/exp/schema/validate"
)

// Schema is the agent schema, in Cedar's human-readable schema format, that
// policies and requests are validated against.
//
//go:embed schema.cedarschema
var Schema []byte

// schemaName is the file name used for [Schema] in error messages.
const schemaName = "schema.cedarschema"

// actionTable holds the Action entities of the schema (with their group
// parents) so that `action in Action::"FileRead"` evaluates.
type actionTable map[types.EntityUID]types.Entity

func (t actionTable) Get(uid types.EntityUID) (types.Entity, bool) {
	e, ok := t[uid]
	return e, ok
}

type builtSchema struct {
	validator *validate.Validator
	actions   actionTable
	extra     []string
}

const (
	actionType = types.EntityType("Action")
	mcpPrefix  = "mcp__"
)

func actionUID(name string) types.EntityUID {
	return types.NewEntityUID(actionType, types.String(name))
}

// referencedActions returns the action names in a policy's action scope.
func referencedActions(p *cedar.Policy) []string {
	var uids []types.EntityUID
	switch s := policyAST(p).Action.(type) {
	case xast.ScopeTypeEq:
		uids = append(uids, s.Entity)
	case xast.ScopeTypeIn:
		uids = append(uids, s.Entity)
	case xast.ScopeTypeInSet:
		uids = append(uids, s.Entities...)
	}
	var names []string
	for _, u := range uids {
		if u.Type == actionType {
			names = append(names, string(u.ID))
		}
	}
	return names
}

func policyAST(p *cedar.Policy) *xast.Policy {
	return (*xast.Policy)(p.AST())
}

// splitMCP splits "mcp__server__tool" into its server and tool. Tool is
// empty for a server group name ("mcp__server").
func splitMCP(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, mcpPrefix)
	if !ok || rest == "" {
		return "", "", false
	}
	server, tool, _ = strings.Cut(rest, "__")
	if server == "" {
		return "", "", false
	}
	return server, tool, true
}

func safeActionName(s string) bool {
	if s == "" || len(s) > 200 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.', r == ':':
		default:
			return false
		}
	}
	return true
}

// buildSchema parses the base schema extended with declarations for the
// actions in refs that it does not declare.
func buildSchema(refs []string) (*builtSchema, error) {
	base, err := parseSchema(Schema)
	if err != nil {
		return nil, fmt.Errorf("agent schema: %w", err)
	}
	var extra []string
	var decl strings.Builder
	declared := make(map[string]bool)
	for _, name := range refs {
		if _, ok := base.Actions[actionUID(name)]; ok || declared[name] {
			continue
		}
		if !safeActionName(name) {
			return nil, fmt.Errorf("action name %q is not a tool name", name)
		}
		declared[name] = true
		extra = append(extra, name)
		server, tool, isMCP := splitMCP(name)
		switch {
		case isMCP && tool == "":
			// A server group; declared below.
		case isMCP:
			group := mcpPrefix + server
			fmt.Fprintf(&decl, "action %q in [%q, Mcp] appliesTo { principal: Agent, resource: Tool, context: McpCtx };\n", name, group)
		default:
			fmt.Fprintf(&decl, "action %q appliesTo { principal: Agent, resource: Tool, context: Ctx };\n", name)
		}
	}
	groups := make(map[string]bool)
	for _, name := range extra {
		if server, _, ok := splitMCP(name); ok {
			groups[mcpPrefix+server] = true
		}
	}
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		if _, ok := base.Actions[actionUID(g)]; !ok {
			fmt.Fprintf(&decl, "action %q in [Mcp];\n", g)
		}
	}
	slices.Sort(extra)
	res := base
	if decl.Len() > 0 {
		src := append(slices.Clone(Schema), "\n// Declared by docket for actions named in policies.\n"+decl.String()...)
		if res, err = parseSchema(src); err != nil {
			return nil, fmt.Errorf("extending agent schema: %w", err)
		}
	}
	acts := make(actionTable, len(res.Actions))
	for uid, a := range res.Actions {
		acts[uid] = a.Entity
	}
	return &builtSchema{validator: validate.New(res), actions: acts, extra: extra}, nil
}

func parseSchema(src []byte) (*resolved.Schema, error) {
	var s schema.Schema
	s.SetFilename(schemaName)
	if err := s.UnmarshalCedar(src); err != nil {
		return nil, err
	}
	return s.Resolve()
}

// baseActions is the action hierarchy of schema.cedarschema, so that an
// Engine loaded with a validated digest need not parse the schema.
// TestQuickActions keeps the two in step.
var baseActions = map[string][]string{
	"FileRead": nil, "FileWrite": nil, "Exec": nil, "Network": nil, "Mcp": nil,
	"Read": {"FileRead"}, "Glob": {"FileRead"}, "Grep": {"FileRead"}, "LS": {"FileRead"},
	"Write": {"FileWrite"}, "Edit": {"FileWrite"}, "MultiEdit": {"FileWrite"}, "NotebookEdit": {"FileWrite"},
	ActionWriteBuildFile: {"FileWrite"}, ActionWriteAutorunFile: {"FileWrite"},
	"Bash": {"Exec"}, "ExecCommand": {"Exec"},
	"WebFetch": {"Network"}, "WebSearch": {"Network"},
	"Task": nil, "TodoWrite": nil, "ExitPlanMode": nil, "BashOutput": nil, "KillShell": nil, "SlashCommand": nil,
	"Agent": nil, "TaskCreate": nil, "TaskGet": nil, "TaskUpdate": nil, "TaskList": nil, "TaskStop": nil, "TaskOutput": nil, "EnterPlanMode": nil, "AskUserQuestion": nil,
	"mcp__ide": {"Mcp"}, "mcp__ide__getDiagnostics": {"mcp__ide", "Mcp"}, "mcp__ide__executeCode": {"mcp__ide", "Mcp"},
}

// quickActions builds the action table buildSchema would, without the schema.
func quickActions(refs []string) (actionTable, []string, error) {
	parents := make(map[string][]string, len(baseActions)+len(refs))
	for name, ps := range baseActions {
		parents[name] = ps
	}
	var extra []string
	for _, name := range refs {
		if _, ok := baseActions[name]; ok || slices.Contains(extra, name) {
			continue
		}
		if !safeActionName(name) {
			return nil, nil, fmt.Errorf("action name %q is not a tool name", name)
		}
		extra = append(extra, name)
		server, tool, isMCP := splitMCP(name)
		switch {
		case isMCP && tool == "":
			parents[name] = []string{"Mcp"}
		case isMCP:
			parents[name] = []string{mcpPrefix + server, "Mcp"}
			if _, ok := parents[mcpPrefix+server]; !ok {
				parents[mcpPrefix+server] = []string{"Mcp"}
			}
		default:
			parents[name] = nil
		}
	}
	slices.Sort(extra)
	t := make(actionTable, len(parents))
	for name, ps := range parents {
		uids := make([]types.EntityUID, len(ps))
		for i, p := range ps {
			uids[i] = actionUID(p)
		}
		uid := actionUID(name)
		t[uid] = types.Entity{UID: uid, Parents: types.NewEntityUIDSet(uids...)}
	}
	return t, extra, nil
}

// ancestors returns the transitive action groups of uid.
func (t actionTable) ancestors(uid types.EntityUID) map[types.EntityUID]bool {
	seen := make(map[types.EntityUID]bool)
	todo := []types.EntityUID{uid}
	for len(todo) > 0 {
		u := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for p := range t[u].Parents.All() {
			if !seen[p] {
				seen[p] = true
				todo = append(todo, p)
			}
		}
	}
	return seen
}

// scopeMayMatch reports whether an action scope can be true for uid.
func scopeMayMatch(scope xast.IsActionScopeNode, uid types.EntityUID, anc map[types.EntityUID]bool) bool {
	switch s := scope.(type) {
	case xast.ScopeTypeEq:
		return s.Entity == uid
	case xast.ScopeTypeIn:
		return s.Entity == uid || anc[s.Entity]
	case xast.ScopeTypeInSet:
		for _, e := range s.Entities {
			if e == uid || anc[e] {
				return true
			}
		}
		return false
	}
	return true
}

type policyEntry struct {
	id  cedar.PolicyID
	pol *cedar.Policy
}

// policySubset is a cedar.PolicyIterator over some of an Engine's policies.
type policySubset []policyEntry

func (s policySubset) All() iter.Seq2[cedar.PolicyID, *cedar.Policy] {
	return func(yield func(cedar.PolicyID, *cedar.Policy) bool) {
		for _, e := range s {
			if !yield(e.id, e.pol) {
				return
			}
		}
	}
}
