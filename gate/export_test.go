package gate

import "github.com/docketlog/docket/policy"

// Engine returns the gate's policy once loaded, for tests.
func (g *Gate) Engine() *policy.Engine {
	g.Preload()
	<-g.loaded
	return g.engine
}

// Home returns the home directory the gate resolves "~" against.
func (g *Gate) Home() string { return g.home }
