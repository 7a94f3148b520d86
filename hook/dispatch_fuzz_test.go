package hook

import (
	"strings"
	"testing"
)

// FuzzDispatch: whatever the command line and the event's
// hook_event_name, a pre-tool event (or one that does not say) is either
// blocked or decided by the pre hook, never receipted as something else;
// and a command line that cannot be read never runs the pre hook.
func FuzzDispatch(f *testing.F) {
	for _, s := range []string{"pre", "PreToolUse", "pre extra", "-agent gemini pre", "post -nope", "", "-h", "pre -deadline 0", "session-start"} {
		for _, ev := range []string{"", "PreToolUse", "BeforeTool", "PostToolUse", "AfterTool", "SessionStart", "Stop", "Notification"} {
			f.Add(s, ev)
		}
	}
	f.Fuzz(func(t *testing.T, cmdline, event string) {
		inv := ParseInvocation(strings.Fields(cmdline))
		r := dispatch(inv, event)
		if r.Block != "" {
			return
		}
		if r.Kind == "" || r.Agent == "" {
			t.Fatalf("dispatch(%q, %q) = %+v: runs no kind or no agent", cmdline, event, r)
		}
		origin, known := eventOrigins[event]
		switch {
		case (event == "" || !known) && inv.Err != nil:
			t.Fatalf("dispatch(%q, %q) = %+v: an unusable command line ran an event that does not say what it is", cmdline, event, r)
		case known && origin.kind == Pre && r.Kind != Pre:
			t.Fatalf("dispatch(%q, %q) = %+v: a pre-tool event was not given to the pre hook", cmdline, event, r)
		case r.Kind == Pre && inv.Err != nil:
			t.Fatalf("dispatch(%q, %q) = %+v: an unusable command line ran the pre hook", cmdline, event, r)
		case r.Kind == Pre && inv.Kind != Pre:
			t.Fatalf("dispatch(%q, %q) = %+v: the pre hook ran for another hook's command line", cmdline, event, r)
		}
	})
}
