package hook_test

import (
	"os"
	"testing"
	"time"

	"github.com/docketlog/docket/store"
)

// BenchmarkHookPreJournal runs the static `docket hook pre` for one allowed
// Bash call in three projects in turn — plain, with the local journal, and
// in observe mode with the journal — and reports the medians, so that the
// journal's cost on the hook's path is measured under the same load:
//
//	go test -run '^$' -bench PreJournal -benchtime 400x ./hook
func BenchmarkHookPreJournal(b *testing.B) {
	static := build(b, docketPkg, "CGO_ENABLED=0")
	type run struct {
		name string
		cfg  store.Config
		ds   []time.Duration
	}
	runs := []*run{{name: "pre-ms"}, {name: "pre-journal-ms", cfg: store.Config{Journal: true}},
		{name: "pre-observe-journal-ms", cfg: store.Config{Observe: true, Journal: true}}}
	type setup struct {
		dir string
		ev  []byte
		env []string
	}
	var setups []setup
	for _, r := range runs {
		p, ev := benchProject(b)
		if err := store.Open(p.dir).WriteConfig(r.cfg); err != nil {
			b.Fatal(err)
		}
		setups = append(setups, setup{p.dir, ev, append(os.Environ(), "CLAUDE_PROJECT_DIR="+p.dir, "HOME="+p.home)})
	}
	for b.Loop() {
		for i, r := range runs {
			s := setups[i]
			r.ds = append(r.ds, runProcess(b, s.dir, s.ev, s.env, static, "hook", "pre"))
		}
	}
	for _, r := range runs {
		b.ReportMetric(float64(median(r.ds))/1e6, r.name)
	}
}
