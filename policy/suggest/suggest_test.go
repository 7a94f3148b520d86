package suggest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/docketlog/docket/policy"
	"github.com/docketlog/docket/policy/suggest"
)

const project = "/work/proj"

func obs(tool, input, reason string) suggest.Observation {
	return suggest.Observation{Agent: "claude-code", ToolName: tool, Decision: policy.Deny, Reason: reason,
		Calls: []policy.Call{{Agent: "claude", ToolName: tool, ToolInput: json.RawMessage(input), Cwd: project}}}
}

// permitsOnly is a policy with permits and no forbids, as a team might
// write: everything it does not permit is default_deny.
const permitsOnly = `
@id("read") permit (principal, action in Action::"FileRead", resource);
@id("bash") permit (principal, action == Action::"Bash", resource);
@id("go") permit (principal, action == Action::"ExecCommand", resource == Program::"go");
`

func TestDraft(t *testing.T) {
	def, err := policy.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	team, err := policy.Load(policy.File{Name: "team.cedar", Data: []byte(permitsOnly)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		policy  *policy.Engine
		obs     []suggest.Observation
		want    []string // in the draft
		notWant []string
		allowed int
	}{
		{
			name:   "domain",
			policy: def,
			obs: []suggest.Observation{
				obs("WebFetch", `{"url":"https://docs.example.org/a","prompt":"p"}`, policy.ReasonDefaultDeny),
				obs("WebFetch", `{"url":"https://docs.example.org/b","prompt":"p"}`, policy.ReasonDefaultDeny),
			},
			want:    []string{`permit (principal, action == Action::"WebFetch", resource in Domain::"docs.example.org")`, `["https"].contains(resource.scheme)`, "2 distinct"},
			allowed: 2,
		},
		{
			name:    "forbid is not overridden",
			policy:  def,
			obs:     []suggest.Observation{obs("Bash", `{"command":"terraform apply"}`, policy.ReasonAsk)},
			want:    []string{`Program::"terraform": asked by commands-allowlist, a forbid with @on_deny("ask")`, "add it to that rule's exceptions"},
			notWant: []string{"permit ("},
		},
		{
			name:    "secrets refused",
			policy:  def,
			obs:     []suggest.Observation{obs("Read", `{"file_path":"/home/u/.aws/credentials"}`, policy.ReasonDeny)},
			want:    []string{"forbidden by", "secrets-by-"},
			notWant: []string{"permit ("},
		},
		{
			name:   "the default policy's forbids hold against a permissive team policy",
			policy: team,
			obs: []suggest.Observation{
				obs("Bash", `{"command":"rm -rf /"}`, policy.ReasonDefaultDeny),
				obs("Write", `{"file_path":"/etc/passwd","content":"x"}`, policy.ReasonDefaultDeny),
			},
			want:    []string{"the default policy forbids it"},
			notWant: []string{"permit ("},
		},
		{
			name:   "programs",
			policy: team,
			obs: []suggest.Observation{
				obs("Bash", `{"command":"make test && cargo build"}`, policy.ReasonDefaultDeny),
				obs("Bash", `{"command":"bash -c 'make'"}`, policy.ReasonDefaultDeny),
				obs("Bash", `{"command":"sudo ls"}`, policy.ReasonDefaultDeny),
			},
			want: []string{`resource == Program::"make"`, `resource == Program::"cargo"`,
				`"bash" runs what its arguments say`, `Program::"sudo": the default policy forbids it`},
			notWant: []string{`Program::"bash")`, `Program::"sudo")`, `Program::"ls"`, "resource);"},
			allowed: 1,
		},
		{
			name:   "files of a project directory",
			policy: team,
			obs: []suggest.Observation{
				obs("Write", `{"file_path":"/work/proj/src/a.go","content":"x"}`, policy.ReasonDefaultDeny),
				obs("Write", `{"file_path":"/work/proj/src/b.go","content":"x"}`, policy.ReasonDefaultDeny),
				obs("Write", `{"file_path":"/work/proj/src/c.go","content":"x"}`, policy.ReasonDefaultDeny),
				obs("Write", `{"file_path":"/work/proj/src/d.go","content":"x"}`, policy.ReasonDefaultDeny),
				obs("Write", `{"file_path":"/work/proj/docs/x.md","content":"x"}`, policy.ReasonDefaultDeny),
				obs("Write", `{"file_path":"/work/proj/README.md","content":"x"}`, policy.ReasonDefaultDeny),
			},
			want: []string{`resource in Directory::"/work/proj/src"`, `resource == File::"/work/proj/docs/x.md"`,
				`resource == File::"/work/proj/README.md"`},
			notWant: []string{`Directory::"/work/proj")`, `Directory::"/work/proj/docs"`},
			allowed: 6,
		},
		{
			name:   "unreadable and unjournaled",
			policy: def,
			obs: []suggest.Observation{
				obs("Bash", `{"command":"$X"}`, policy.ReasonDynamic),
				{Agent: "claude-code", ToolName: "Bash", Decision: policy.Deny, Reason: policy.ReasonDefaultDeny},
			},
			want:    []string{"not a literal", "input not in the journal"},
			notWant: []string{"permit ("},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := suggest.Draft(t.Context(), tt.obs, suggest.Options{Policy: tt.policy, Default: def, Project: project, Home: "/home/u"})
			if err != nil {
				t.Fatalf("Draft = %v", err)
			}
			draft := string(res.Cedar)
			for _, w := range tt.want {
				if !strings.Contains(draft, w) {
					t.Errorf("Draft lacks %q:\n%s", w, draft)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(draft, w) {
					t.Errorf("Draft holds %q:\n%s", w, draft)
				}
			}
			if res.Allowed != tt.allowed || res.Observed != len(tt.obs) {
				t.Errorf("Draft allowed %d of %d, want %d of %d", res.Allowed, res.Observed, tt.allowed, len(tt.obs))
			}
			// The draft loads beside the policy, as docket policy check would.
			files := append(tt.policy.Files(), policy.File{Name: "suggested.cedar", Data: res.Cedar})
			if _, err := policy.Load(files...); err != nil {
				t.Errorf("policy with the draft does not load: %v\n%s", err, draft)
			}
		})
	}
}

// A draft saved into the policy and drafted again takes new IDs.
func TestDraftTwice(t *testing.T) {
	def, err := policy.LoadDefault()
	if err != nil {
		t.Fatal(err)
	}
	o := []suggest.Observation{obs("WebFetch", `{"url":"https://a.example/x","prompt":"p"}`, policy.ReasonDefaultDeny),
		obs("WebFetch", `{"url":"http://b.example/x","prompt":"p"}`, policy.ReasonDefaultDeny)}
	first, err := suggest.Draft(t.Context(), o[:1], suggest.Options{Policy: def, Project: project})
	if err != nil {
		t.Fatal(err)
	}
	withFirst, err := policy.Load(append(def.Files(), policy.File{Name: "suggested.cedar", Data: first.Cedar})...)
	if err != nil {
		t.Fatal(err)
	}
	second, err := suggest.Draft(t.Context(), o, suggest.Options{Policy: withFirst, Project: project})
	if err != nil {
		t.Fatalf("Draft over a policy holding the first draft = %v", err)
	}
	if !strings.Contains(string(second.Cedar), `@id("suggested-2-webfetch")`) || strings.Contains(string(second.Cedar), `Domain::"a.example"`) ||
		!strings.Contains(string(second.Cedar), `["http"]`) || second.Allowed != 2 {
		t.Errorf("second draft:\n%s\nwant only b.example (http), as suggested-2, all allowed", second.Cedar)
	}
}
