package suggest

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// minDirFiles is how many distinct files of one project directory an
// action must have been refused on before the draft permits the directory
// rather than the files.
const minDirFiles = 4

// A group is what one permit covers: one action and resources that share
// a domain, a directory, or nothing (an exact list).
type group struct {
	action string
	// scope is the permit's resource scope (`resource in Domain::"x"`,
	// `resource == Program::"x"`), or "" for an exact list in when.
	scope     string
	resources []string
	schemes   []string // URL groups: the schemes seen
	what      string   // the comment's description
	calls     int
}

type groups struct {
	project string
	byKey   map[string]*group
	order   []string
}

func newGroups(project string) *groups {
	return &groups{project: project, byKey: make(map[string]*group)}
}

func (g *groups) get(key string, mk func() *group) *group {
	gr, ok := g.byKey[key]
	if !ok {
		gr = mk()
		g.byKey[key] = gr
		g.order = append(g.order, key)
	}
	return gr
}

// add puts request r in its group, or says why no permit is drafted for it.
func (g *groups) add(r request) string {
	typ, id := "", ""
	var attrs map[string]any
	if e := r.ResourceEntity; e != nil {
		typ, id, attrs = e.UID.Type, e.UID.ID, e.Attrs
	} else if t, _, ok := strings.Cut(r.Resource, "::"); ok {
		typ = t
	}
	switch typ {
	case "Program":
		if dangerousPrograms[id] || strings.HasPrefix(id, "mkfs") {
			return fmt.Sprintf("%q runs what its arguments say, or with more privilege: a permit for the program would permit everything it can be told to do (write a rule on context by hand)", id)
		}
		gr := g.get(r.Action+"\x00program\x00"+id, func() *group {
			return &group{action: r.Action, scope: "resource == " + r.Resource, what: "the program " + id}
		})
		gr.add(r.Resource, "")
		return ""
	case "URL":
		host, _ := attrs["host"].(string)
		scheme, _ := attrs["scheme"].(string)
		if isIP, _ := attrs["is_ip"].(bool); host == "" || isIP {
			break // exact URLs
		}
		gr := g.get(r.Action+"\x00domain\x00"+host, func() *group {
			return &group{action: r.Action, scope: "resource in " + uid("Domain", host), what: "URLs of " + host}
		})
		gr.add(r.Resource, scheme)
		return ""
	case "File":
		inProject, _ := attrs["in_project"].(bool)
		dir := filepath.Dir(id)
		if inProject && dir != g.project && inside(dir, g.project) {
			gr := g.get(r.Action+"\x00dir\x00"+dir, func() *group {
				return &group{action: r.Action, what: "files in " + dir}
			})
			gr.add(r.Resource, "")
			if len(gr.resources) >= minDirFiles {
				gr.scope = "resource in " + uid("Directory", dir)
			}
			return ""
		}
	}
	gr := g.get(r.Action+"\x00exact", func() *group {
		return &group{action: r.Action, what: "these resources"}
	})
	gr.add(r.Resource, "")
	return ""
}

func (gr *group) add(resource, scheme string) {
	gr.calls++
	if !slices.Contains(gr.resources, resource) {
		gr.resources = append(gr.resources, resource)
	}
	if scheme != "" && !slices.Contains(gr.schemes, scheme) {
		gr.schemes = append(gr.schemes, scheme)
	}
}

// permits renders one permit per group, in the order the groups were
// first seen, with IDs none of taken.
func (g *groups) permits(taken []string) []string {
	var out []string
	n := 0
	for _, key := range g.order {
		gr := g.byKey[key]
		action := strings.TrimSuffix(strings.TrimPrefix(gr.action, `Action::"`), `"`)
		var b strings.Builder
		fmt.Fprintf(&b, "\n// %s on %s: %d request(s) no policy permitted", oneLine(action), oneLine(gr.what), gr.calls)
		if gr.scope != "" && !strings.HasPrefix(gr.scope, "resource ==") {
			fmt.Fprintf(&b, ", %d distinct", len(gr.resources))
		}
		b.WriteString("\n")
		id := ""
		for id == "" || slices.Contains(taken, id) {
			n++
			id = fmt.Sprintf("suggested-%d-%s", n, slug(action))
		}
		fmt.Fprintf(&b, "@id(%q)\n", id)
		scope := gr.scope
		var when []string
		if scope == "" {
			scope = "resource"
			if len(gr.resources) == 1 {
				scope = "resource == " + gr.resources[0]
			} else {
				slices.Sort(gr.resources)
				when = append(when, "resource in ["+strings.Join(gr.resources, ", ")+"]")
			}
		}
		if len(gr.schemes) > 0 {
			slices.Sort(gr.schemes)
			qs := make([]string, len(gr.schemes))
			for i, s := range gr.schemes {
				qs[i] = fmt.Sprintf("%q", s)
			}
			when = append(when, "["+strings.Join(qs, ", ")+"].contains(resource.scheme)")
		}
		fmt.Fprintf(&b, "permit (principal, action == %s, %s)", gr.action, scope)
		if len(when) > 0 {
			fmt.Fprintf(&b, "\nwhen { %s }", strings.Join(when, " && "))
		}
		b.WriteString(";\n")
		out = append(out, b.String())
	}
	return out
}

// slug makes a policy ID part of an action name: lowercase letters,
// digits and dashes.
func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}
