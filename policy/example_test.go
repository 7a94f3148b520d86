package policy_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/docketlog/docket/policy"
)

func ExampleEngine_Decide() {
	e, err := policy.LoadDefault()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, cmd := range []string{"go test ./...", "git push origin main", "ls; rm -rf /", "$X -rf /"} {
		input, _ := json.Marshal(map[string]string{"command": cmd})
		d := e.Decide(context.Background(), policy.Call{
			Agent:     "claude",
			ToolName:  "Bash",
			ToolInput: input,
			Cwd:       "/nonexistent/home/dev/proj",
			Home:      "/nonexistent/home/dev",
		})
		fmt.Println(cmd, "=>", d.Decision, d.Reason, d.PolicyIDs)
	}
	// Output:
	// go test ./... => allow cedar_allow [bash-tool commands-run files-read]
	// git push origin main => require_approval cedar_ask [commands-git-push-ask]
	// ls; rm -rf / => deny cedar_deny [files-write-outside-project]
	// $X -rf / => deny dynamic_command []
}

func ExampleLoad() {
	e, err := policy.Load(policy.File{Name: "team.cedar", Data: []byte(`
@id("read-anything")
permit (principal, action in Action::"FileRead", resource);

@id("no-secrets")
forbid (principal, action in Action::"FileRead", resource)
when { resource.name like ".env*" || resource in Directory::"~/.ssh" };
`)})
	if err != nil {
		fmt.Println(err)
		return
	}
	s := e.Check()
	fmt.Println(s.Policies, s.Permits, s.Forbids)
	// Output:
	// [read-anything no-secrets] 1 1
}
