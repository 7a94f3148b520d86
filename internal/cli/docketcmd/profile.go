package docketcmd

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// profileFlags are the -cpuprofile and -memprofile flags of the commands
// that read a whole log (audit, monitor): so that what a user's run of
// the command spends its time and memory on can be seen with go tool pprof.
type profileFlags struct {
	cpu, mem string
}

const profileOptions = `    -cpuprofile FILE      write a CPU profile of the run to FILE (go tool pprof)
    -memprofile FILE      write a heap profile to FILE, taken when the live heap
                          was largest (checked every 250ms)
`

func (pf *profileFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&pf.cpu, "cpuprofile", "", "")
	fs.StringVar(&pf.mem, "memprofile", "", "")
}

// run starts the profiles asked for and returns the function that stops
// and writes them, or reports on stderr why it could not.
func (pf *profileFlags) run(stderr io.Writer, cmd string) (stop func(), ok bool) {
	stopErr, err := pf.start()
	if err != nil {
		errorf(stderr, "%s: %v", cmd, err)
		return nil, false
	}
	return func() {
		if err := stopErr(); err != nil {
			errorf(stderr, "%s: %v", cmd, err)
		}
	}, true
}

// start starts the CPU profile and the heap sampler, as asked for, and
// returns the function that stops them and writes the profiles.
func (pf *profileFlags) start() (stop func() error, err error) {
	var cpu *os.File
	if pf.cpu != "" {
		if cpu, err = os.Create(pf.cpu); err != nil {
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(cpu); err != nil {
			cpu.Close()
			return nil, fmt.Errorf("-cpuprofile: %w", err)
		}
	}
	var heap []byte
	done, sampled := make(chan struct{}), make(chan struct{})
	if pf.mem != "" {
		go func() {
			defer close(sampled)
			heap = peakHeap(done)
		}()
	} else {
		close(sampled)
	}
	return func() error {
		close(done)
		<-sampled
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				return fmt.Errorf("-cpuprofile: %w", err)
			}
		}
		if pf.mem == "" {
			return nil
		}
		if err := os.WriteFile(pf.mem, heap, 0o644); err != nil {
			return fmt.Errorf("-memprofile: %w", err)
		}
		return nil
	}, nil
}

// peakHeap returns the heap profile taken, until done is closed, when the
// live heap after a collection was the largest seen.
func peakHeap(done <-chan struct{}) []byte {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	var best bytes.Buffer
	take := func() {
		metrics.Read(sample)
		if live := sample[0].Value.Uint64(); live > peak || best.Len() == 0 {
			peak = live
			best.Reset()
			pprof.Lookup("heap").WriteTo(&best, 0)
		}
	}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			take()
			return best.Bytes()
		case <-t.C:
			take()
		}
	}
}
