package explorer

import (
	"bufio"
	"crypto/ed25519"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkExplore measures `docket explore` as a user runs it, over a
// log of DOCKET_EXPLORE_BENCH_N entries (default 200,000) in a storage
// directory, with a witness policy: the time to its first page and to
// fully caught up (and the rate), its restart over its -state, the
// latency of its home, search, session and issuer pages once caught up
// (p50 and p99 of sequential requests), and its peak RSS; beside the
// floor, Ed25519 verifications per second on every core of this machine.
// Run it alone: go test ./explorer -run '^$' -bench BenchmarkExplore -benchtime 1x.
func BenchmarkExplore(b *testing.B) {
	n := benchN(b, "DOCKET_EXPLORE_BENCH_N", 200_000)
	bin := os.Getenv("DOCKET_BIN")
	if bin == "" {
		bin = filepath.Join(b.TempDir(), "docket")
		out, err := exec.Command("go", "build", "-o", bin, "../cmd/docket").CombinedOutput()
		if err != nil {
			b.Fatalf("go build: %v\n%s", err, out)
		}
	}
	logDir, vkey, policy := benchLog(b, n)
	state := b.TempDir()
	for b.Loop() {
		floor, floorCPU := ed25519Floor()
		b.ReportMetric(floor, "floor-verifies/s")
		b.ReportMetric(floorCPU, "floor-verifies/cpu-s")
		// During catch-up, a reader asks for these pages one after another,
		// one every 250 ms (as a person clicks), and records how long each
		// 200 took.
		// The issuer page is the first one the home page links to, once it
		// lists one.
		during := []struct{ name, path string }{
			{"home", "/"},
			{"search", "/search?tool=Read&decision=deny"},
			{"session", "/session/1"},
			{"issuer", ""},
		}
		issuerLink := regexp.MustCompile(`href="(/issuer/sb:issuer:[^"/]+)"`)
		run := func(label string) (*exploreProcess, string) {
			p := startExplore(b, bin, "-log", logDir, "-log-key", vkey, "-witness-policy", policy, "-state", state)
			first := p.waitFor(b, "/", func(code int, _ string) bool { return code == 200 })
			stop := make(chan struct{})
			var wg sync.WaitGroup
			lat := map[string][]float64{}
			wg.Go(func() {
				client := &http.Client{Timeout: time.Minute}
				for k := 0; ; k++ {
					select {
					case <-stop:
						return
					case <-time.After(250 * time.Millisecond):
					}
					pg := &during[k%len(during)]
					if pg.path == "" {
						continue
					}
					start := time.Now()
					resp, err := client.Get(p.url + pg.path)
					if err != nil {
						continue
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if m := issuerLink.FindSubmatch(body); m != nil && during[3].path == "" {
						during[3].path = string(m[1])
					}
					if resp.StatusCode == 200 {
						lat[pg.name] = append(lat[pg.name], float64(time.Since(start).Microseconds())/1000)
					}
				}
			})
			var health string
			caught := p.waitFor(b, "/health", func(_ int, body string) bool { health = body; return strings.Contains(body, `"ok"`) })
			close(stop)
			wg.Wait()
			b.ReportMetric(first.Seconds(), label+"-first-page-s")
			b.ReportMetric(caught.Seconds(), label+"-caught-up-s")
			if label == "cold" {
				b.ReportMetric(float64(n)/caught.Seconds(), "cold-entries/s")
				// On a shared machine, CPU time is the fairer measure: the
				// entries per CPU-second of the explorer beside the
				// verifications per CPU-second of the floor.
				cpu := p.cpuSeconds(b)
				b.ReportMetric(cpu, "cold-cpu-s")
				b.ReportMetric(float64(n)/cpu, "cold-entries/cpu-s")
				b.ReportMetric(float64(n)/cpu/floorCPU, "cold-vs-floor-per-cpu")
				for _, pg := range during {
					if ds := lat[pg.name]; len(ds) > 0 {
						slices.Sort(ds)
						b.ReportMetric(ds[len(ds)/2], "catching-up-"+pg.name+"-p50-ms")
						b.ReportMetric(ds[len(ds)*99/100], "catching-up-"+pg.name+"-p99-ms")
					}
				}
			}
			return p, health
		}
		p, _ := run("cold")
		entry := p.body(b, fmt.Sprintf("/entry/%d", n/2))
		hash := regexp.MustCompile(`<dt>Chain hash</dt><dd><code>(sha256:[0-9a-f]{64})</code>`).FindStringSubmatch(entry)
		session := regexp.MustCompile(`href="(/session/\d+)" id="session-link"`).FindStringSubmatch(entry)
		issuer := regexp.MustCompile(`<dt>Issuer</dt><dd><a href="(/issuer/[^"]+)"`).FindStringSubmatch(entry)
		if hash == nil || session == nil || issuer == nil {
			b.Fatalf("entry page lacks a hash, session or issuer:\n%s", entry)
		}
		for _, pg := range []struct{ name, path string }{
			{"home", "/"},
			{"home-deep", fmt.Sprintf("/?before=%d", n/3)},
			{"search-hash", "/search?q=" + hash[1]},
			{"search-tool-deny", "/search?tool=Read&decision=deny"},
			{"search-rare", "/search?kind=unmediated&tool=Write"},
			{"search-none", "/search?tool=NoSuchTool"},
			{"search-bad", "/search?kind=bad"},
			{"search-hour", "/search?" + url.Values{"from": {hourAt(n / 2)}, "to": {hourAt(n/2 + 3600/17)}}.Encode()},
			{"search-deep", fmt.Sprintf("/search?decision=deny&before=%d", n/10)},
			{"session", session[1]},
			{"issuer", issuer[1]},
		} {
			p50, p99 := p.latency(b, pg.path, 200)
			b.ReportMetric(p50, pg.name+"-p50-ms")
			b.ReportMetric(p99, pg.name+"-p99-ms")
		}
		b.ReportMetric(float64(p.stop(b))/1024, "cold-peak-RSS-MB")
		if fi, err := os.Stat(filepath.Join(state, "explorer.db")); err == nil {
			b.ReportMetric(float64(fi.Size())/float64(n), "index-bytes/entry")
		}
		p, health := run("restart")
		b.ReportMetric(float64(p.stop(b))/1024, "restart-peak-RSS-MB")
		// What the restarted process verified itself: nothing, as the log
		// did not grow.
		m := regexp.MustCompile(`"verified_since_start":(\d+)`).FindStringSubmatch(health)
		if m == nil || m[1] != "0" {
			b.Fatalf("restart: /health = %s, want verified_since_start 0", health)
		}
		b.ReportMetric(0, "restart-verified-entries")
	}
}

// benchLog returns the storage directory, key and witness policy file of a
// cosigned log of n entries. With DOCKET_EXPLORE_BENCH_DIR set, it is kept
// there (DIR/log, DIR/log.vkey, DIR/policy) and reused by later runs of the
// same n: building 10^6 entries takes many minutes.
func benchLog(b *testing.B, n int) (dir, vkey, policy string) {
	keep := os.Getenv("DOCKET_EXPLORE_BENCH_DIR")
	if keep != "" {
		k, err1 := os.ReadFile(filepath.Join(keep, "log.vkey"))
		size, err2 := os.ReadFile(filepath.Join(keep, "entries"))
		if err1 == nil && err2 == nil && strings.TrimSpace(string(size)) == strconv.Itoa(n) {
			return filepath.Join(keep, "log"), strings.TrimSpace(string(k)), filepath.Join(keep, "policy")
		}
	} else {
		keep = b.TempDir()
	}
	start := time.Now()
	f := newFixture(b, n, 8)
	b.Logf("fixture of %d entries built in %v", n, time.Since(start).Round(time.Second))
	os.RemoveAll(filepath.Join(keep, "log"))
	if err := os.CopyFS(filepath.Join(keep, "log"), os.DirFS(f.Dir)); err != nil {
		b.Fatal(err)
	}
	for name, data := range map[string]string{"log.vkey": f.VKey, "policy": f.Policy, "entries": strconv.Itoa(n)} {
		if err := os.WriteFile(filepath.Join(keep, name), []byte(strings.TrimSpace(data)+"\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return filepath.Join(keep, "log"), f.VKey, filepath.Join(keep, "policy")
}

// hourAt is the time of the fixture's entry i (newFixture issues them 17 s
// apart), as a search form gives it.
func hourAt(i int) string {
	return time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * 17 * time.Second).Format("2006-01-02T15:04")
}

// ed25519Floor is how many Ed25519 signatures every core of this machine
// verifies per second, and per second of CPU time.
func ed25519Floor() (perSecond, perCPUSecond float64) {
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	pub, key, _ := ed25519.GenerateKey(nil)
	msg := make([]byte, 400)
	sig := ed25519.Sign(key, msg)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	start := time.Now()
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			k := 0
			for time.Since(start) < 2*time.Second {
				ed25519.Verify(pub, msg, sig)
				k++
			}
			mu.Lock()
			total += k
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
	return float64(total) / elapsed, float64(total) / cpu.Seconds()
}

// cpuSeconds is the CPU time the explorer has used so far.
func (p *exploreProcess) cpuSeconds(b *testing.B) float64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's name, which is in parentheses:
	// utime and stime are the 12th and 13th, in clock ticks (100 a second).
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / 100
}

type exploreProcess struct {
	cmd     *exec.Cmd
	url     string
	started time.Time
}

func startExplore(b *testing.B, bin string, args ...string) *exploreProcess {
	cmd := exec.Command(bin, append([]string{"explore", "-listen", "127.0.0.1:0"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = io.Discard
	p := &exploreProcess{cmd: cmd, started: time.Now()}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("docket explore: %v", err)
	}
	p.url = strings.TrimSuffix(regexp.MustCompile(`http://\S+/`).FindString(line), "/")
	go io.Copy(io.Discard, out)
	return p
}

// waitFor asks for path until ok says the answer is the one awaited, and
// returns how long after the start that was.
func (p *exploreProcess) waitFor(b *testing.B, path string, ok func(int, string) bool) time.Duration {
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		resp, err := client.Get(p.url + path)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if ok(resp.StatusCode, string(body)) {
				return time.Since(p.started)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *exploreProcess) body(b *testing.B, path string) string {
	resp, err := http.Get(p.url + path)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		b.Fatalf("GET %s = %d:\n%s", path, resp.StatusCode, body)
	}
	return string(body)
}

// latency returns the p50 and p99 in milliseconds of k sequential
// requests for path, each of which must answer 200.
func (p *exploreProcess) latency(b *testing.B, path string, k int) (p50, p99 float64) {
	ds := make([]float64, k)
	for i := range ds {
		start := time.Now()
		p.body(b, path)
		ds[i] = float64(time.Since(start).Microseconds()) / 1000
	}
	slices.Sort(ds)
	return ds[k/2], ds[k*99/100]
}

// stop interrupts the explorer and returns its peak RSS in KiB.
func (p *exploreProcess) stop(b *testing.B) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	var hwm int64
	if err == nil {
		if m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status); m != nil {
			hwm, _ = strconv.ParseInt(string(m[1]), 10, 64)
		}
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	p.cmd.Wait()
	return hwm
}

// benchN is the entry count the environment variable name sets, def when
// it is unset.
func benchN(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return n
}
