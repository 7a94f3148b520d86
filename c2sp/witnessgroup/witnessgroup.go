// Package witnessgroup builds Tessera's witness group from a C2SP
// tlog-policy parsed by c2sp.ParsePolicy, so that the log publishes only
// checkpoints its verifiers accept. It is apart from package c2sp so that
// verifiers do not link Tessera.
package witnessgroup

import (
	"fmt"
	"net/url"

	"github.com/transparency-dev/tessera"

	"github.com/docketlog/docket/c2sp"
)

// FromPolicy returns the tessera.WitnessGroup of p's quorum, for
// tessera.AppendOptions.WithWitnesses: the witnesses and groups the quorum
// reaches, each witness with its URL (its tlog-witness submission prefix,
// required) and each group with its threshold. For "quorum none" it returns
// nil: the log publishes without cosignatures and must not call
// WithWitnesses.
func FromPolicy(p *c2sp.Policy) (*tessera.WitnessGroup, error) {
	if p.Unwitnessed() {
		return nil, nil
	}
	b := builder{witnesses: make(map[string]c2sp.Witness), groups: make(map[string]c2sp.Group)}
	for _, w := range p.Witnesses {
		b.witnesses[w.Name] = w
	}
	for _, g := range p.Groups {
		b.groups[g.Name] = g
	}
	if _, ok := b.groups[p.Quorum]; ok {
		g, err := b.group(p.Quorum)
		if err != nil {
			return nil, err
		}
		return &g, nil
	}
	w, err := b.witness(p.Quorum)
	if err != nil {
		return nil, err
	}
	g := tessera.NewWitnessGroup(1, w)
	return &g, nil
}

// builder turns names of a parsed policy into Tessera components. ParsePolicy
// guarantees that every name is defined before use, so the recursion ends.
type builder struct {
	witnesses map[string]c2sp.Witness
	groups    map[string]c2sp.Group
}

func (b builder) witness(name string) (tessera.Witness, error) {
	w := b.witnesses[name]
	if w.URL == "" {
		return tessera.Witness{}, fmt.Errorf("witness %s has no URL: the log cannot ask it to cosign", name)
	}
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return tessera.Witness{}, fmt.Errorf("witness %s: URL %q is not an http(s) URL", name, w.URL)
	}
	tw, err := tessera.NewWitness(w.VKey, u)
	if err != nil {
		return tessera.Witness{}, fmt.Errorf("witness %s: %w", name, err)
	}
	return tw, nil
}

func (b builder) group(name string) (tessera.WitnessGroup, error) {
	g := b.groups[name]
	tg := tessera.WitnessGroup{N: g.K}
	for _, m := range g.Members {
		if _, ok := b.groups[m]; ok {
			c, err := b.group(m)
			if err != nil {
				return tessera.WitnessGroup{}, err
			}
			tg.Components = append(tg.Components, c)
			continue
		}
		c, err := b.witness(m)
		if err != nil {
			return tessera.WitnessGroup{}, fmt.Errorf("group %s: %w", name, err)
		}
		tg.Components = append(tg.Components, c)
	}
	return tg, nil
}
