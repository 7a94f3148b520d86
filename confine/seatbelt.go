package confine

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
)

// SeatbeltProfile returns the macOS sandbox profile (SBPL, as sandbox-exec
// -p takes it) that enforces c: everything readable and executable, writes
// only below the write trees and the terminal and null devices, the
// read-only trees not writable, and the secrets neither readable nor
// writable, by path (DenyPaths) and by name anywhere in the project and in
// the home directory's top level (DenyNames, DenyRel, except AllowNames).
// Later rules win in SBPL, so the denials come last.
func (c *Confinement) SeatbeltProfile() string {
	var b strings.Builder
	b.WriteString("(version 1)\n(allow default)\n(deny file-write*)\n(allow file-write*\n")
	for _, p := range append(append([]string(nil), c.Write...), c.ToolWrite...) {
		fmt.Fprintf(&b, "  (subpath %s)\n", sbString(p))
	}
	for _, p := range []string{"/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper"} {
		fmt.Fprintf(&b, "  (literal %s)\n", sbString(p))
	}
	b.WriteString("  (regex #\"^/dev/ttys[0-9]+$\"))\n")
	if len(c.ReadOnly) > 0 {
		b.WriteString("(deny file-write*\n")
		for _, r := range c.ReadOnly {
			fmt.Fprintf(&b, "  (subpath %s)\n", sbString(filepath.Join(c.Project, r)))
		}
		b.WriteString(")\n")
	}
	b.WriteString("(deny file-read* file-write*\n")
	for _, p := range c.DenyPaths {
		fmt.Fprintf(&b, "  (subpath %s)\n", sbString(p))
	}
	for _, n := range c.DenyNames {
		fmt.Fprintf(&b, "  (regex %s)\n", sbRegex("^"+regexp.QuoteMeta(c.Project)+"/(.*/)?"+globRegex(n)+"(/.*)?$"))
		fmt.Fprintf(&b, "  (regex %s)\n", sbRegex("^"+regexp.QuoteMeta(c.Home)+"/"+globRegex(n)+"(/.*)?$"))
	}
	for _, r := range c.DenyRel {
		fmt.Fprintf(&b, "  (regex %s)\n", sbRegex("^"+regexp.QuoteMeta(c.Project)+"/"+globRegex(r)+"(/.*)?$"))
	}
	b.WriteString(")\n")
	if len(c.AllowNames) > 0 {
		b.WriteString("(allow file-read*\n")
		for _, n := range c.AllowNames {
			fmt.Fprintf(&b, "  (regex %s)\n", sbRegex("^"+regexp.QuoteMeta(c.Project)+"/(.*/)?"+globRegex(n)+"$"))
		}
		b.WriteString(")\n")
	}
	return b.String()
}

// globRegex turns a lowercase glob where only * is special into a
// case-insensitive regular expression of one path element's characters.
func globRegex(g string) string {
	var b strings.Builder
	for _, r := range g {
		switch {
		case r == '*':
			b.WriteString("[^/]*")
		case r >= 'a' && r <= 'z':
			fmt.Fprintf(&b, "[%c%c]", r, r-'a'+'A')
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return b.String()
}

// sbString quotes s as an SBPL string literal.
func sbString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// sbRegex quotes a regular expression as an SBPL regex literal.
func sbRegex(re string) string {
	return `#"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(re) + `"`
}
