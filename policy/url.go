package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/cedar-policy/cedar-go/types"
)

const (
	urlType    = types.EntityType("URL")
	domainType = types.EntityType("Domain")
)

// parsedURL is a URL as the gate sees it.
type parsedURL struct {
	URL    string   // normalized form
	Scheme string   // "http" or "https"
	Host   string   // lower case, no trailing dot, no brackets
	Port   int      // explicit or the scheme default
	Path   string   // escaped path, "/" if empty
	IsIP   bool     // Host is an IP address literal
	Chain  []string // Host, then each parent domain ("a.b.com", "b.com", "com")
}

// parseURL parses a URL the way the gate does. It refuses anything but
// absolute http and https URLs, and refuses userinfo ("https://github.com@evil.example"),
// backslashes, control characters and non-ASCII hosts, so the host the gate
// checks is the host a client connects to.
func parseURL(raw string) (*parsedURL, error) {
	if raw == "" {
		return nil, errors.New("empty url")
	}
	if len(raw) > 8192 {
		return nil, errors.New("url too long")
	}
	for _, r := range raw {
		if r <= ' ' || r == 0x7f || r == '\\' {
			return nil, fmt.Errorf("url contains %q", r)
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid url: %v", oneLine(err.Error()))
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return nil, fmt.Errorf("url scheme %q is not http or https", u.Scheme)
	}
	if u.Opaque != "" {
		return nil, errors.New("url has no host")
	}
	if u.User != nil {
		return nil, errors.New("url has userinfo (user@host), which hides the real host")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return nil, errors.New("url has no host")
	}
	p := &parsedURL{Scheme: scheme, Host: host}
	if ps := u.Port(); ps != "" {
		n, err := strconv.Atoi(ps)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("invalid url port %q", ps)
		}
		p.Port = n
	} else if scheme == "https" {
		p.Port = 443
	} else {
		p.Port = 80
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return nil, fmt.Errorf("invalid url host %q", host)
		}
		p.IsIP = true
		p.Host = a.String()
		p.Chain = []string{p.Host}
	} else {
		labels := strings.Split(host, ".")
		for _, l := range labels {
			if !validLabel(l) {
				return nil, fmt.Errorf("invalid url host %q", host)
			}
		}
		if isNumeric(labels[len(labels)-1]) {
			// "1.2.3" and "0x7f.1" are IP addresses to some resolvers.
			return nil, fmt.Errorf("invalid url host %q", host)
		}
		for i := range labels {
			p.Chain = append(p.Chain, strings.Join(labels[i:], "."))
		}
	}
	p.Path = u.EscapedPath()
	if p.Path == "" {
		p.Path = "/"
	}
	hostport := p.Host
	if strings.Contains(hostport, ":") {
		hostport = "[" + hostport + "]"
	}
	if u.Port() != "" {
		hostport += ":" + strconv.Itoa(p.Port)
	}
	n := url.URL{Scheme: scheme, Host: hostport, RawPath: u.RawPath, Path: u.Path, RawQuery: u.RawQuery}
	p.URL = n.String()
	return p, nil
}

func validLabel(l string) bool {
	if l == "" || len(l) > 63 {
		return false
	}
	for _, r := range l {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
		default:
			return false
		}
	}
	return true
}

func isNumeric(l string) bool {
	if strings.HasPrefix(l, "0x") {
		return true
	}
	for _, r := range l {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// urlEntity builds (and records) the URL entity and its Domain chain.
func (x *callEnv) urlEntity(raw string) (types.EntityUID, error) {
	p, err := parseURL(raw)
	if err != nil {
		return types.EntityUID{}, err
	}
	uid := types.NewEntityUID(urlType, types.String(p.URL))
	parents := make([]types.EntityUID, len(p.Chain))
	for i, d := range p.Chain {
		parents[i] = types.NewEntityUID(domainType, types.String(d))
	}
	x.ents[uid] = types.Entity{
		UID:     uid,
		Parents: types.NewEntityUIDSet(parents...),
		Attributes: types.NewRecord(types.RecordMap{
			"url":    types.String(p.URL),
			"scheme": types.String(p.Scheme),
			"host":   types.String(p.Host),
			"port":   types.Long(p.Port),
			"path":   types.String(p.Path),
			"is_ip":  types.Boolean(p.IsIP),
		}),
	}
	return uid, nil
}
