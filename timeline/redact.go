package timeline

import (
	"path"
	"regexp"
	"strings"
	"sync"
)

// Redacted replaces what Redact hides.
const Redacted = "[redacted]"

// tokenShapes are secrets of well-known shapes: cloud and forge tokens,
// API keys, private keys, bearer tokens, credentials in URLs. They are
// compiled at first use, not at init: every docket process (the pre hook
// among them) links this package.
var tokenShapes = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`),
		regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`),
		regexp.MustCompile(`\bsk-(ant-|proj-)?[A-Za-z0-9_-]{20,}`),
		regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`),
		regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`),
		regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`),
		regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}`),
		regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)`),
		regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{16,}`),
		regexp.MustCompile(`://[^/\s:@]+:[^/\s@]+@`), // credentials in a URL
	}
})

// secretAssignment is NAME=value or "name": "value" where the name says
// secret; the value is hidden, the name kept.
var secretAssignment = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)([A-Za-z0-9_.-]*(password|passwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credential)[A-Za-z0-9_.-]*"?\s*[:=]\s*"?)([^\s"',;&|]+)`)
})

// Redact hides the secrets of well-known shapes in s (tokens, keys, secret
// assignments, credentials in URLs) for display. It is a display filter,
// not a guarantee: the journal keeps the exact input, 0600.
func Redact(s string) string {
	for _, re := range tokenShapes() {
		s = re.ReplaceAllStringFunc(s, func(m string) string {
			if strings.HasPrefix(m, "://") {
				return "://" + Redacted + "@"
			}
			if f := strings.Fields(m); len(f) == 2 && (strings.EqualFold(f[0], "bearer") || strings.EqualFold(f[0], "basic")) {
				return f[0] + " " + Redacted
			}
			return Redacted
		})
	}
	return secretAssignment().ReplaceAllString(s, "${1}"+Redacted)
}

// SecretFile reports whether a path names a file the default policy keeps
// agents out of by its name (secrets-by-name): .env files, keys,
// certificates, credential files.
func SecretFile(p string) bool {
	name := strings.ToLower(path.Base(p))
	switch name {
	case ".netrc", ".pgpass", ".npmrc", ".pypirc", ".git-credentials", "credentials.json":
		return true
	case ".env.example", ".env.sample", ".env.template":
		return false
	}
	for _, pre := range []string{".env", "id_rsa", "id_ed25519", "id_ecdsa"} {
		if strings.HasPrefix(name, pre) {
			return true
		}
	}
	for _, suf := range []string{".pem", ".key", ".p12"} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// quoted is a quoted string of a shell command.
var quoted = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`'[^']*'|"(?:[^"\\]|\\.)*"`) })

// redactSecretWrites hides what a shell command names a secret file
// (SecretFile) with might write into it: its quoted strings and any here
// document.
func redactSecretWrites(cmd string) string {
	secret := false
	for _, f := range strings.FieldsFunc(cmd, func(r rune) bool { return strings.ContainsRune(" \t\n<>|;&'\"", r) }) {
		if SecretFile(f) {
			secret = true
			break
		}
	}
	if !secret {
		return cmd
	}
	if i := strings.Index(cmd, "<<"); i >= 0 {
		cmd = cmd[:i] + "<< " + Redacted
	}
	return quoted().ReplaceAllString(cmd, Redacted)
}
