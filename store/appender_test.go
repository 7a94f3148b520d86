package store

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/docketlog/docket/receipts"
)

// The test binary doubles as another process appending to a store, run as
// `env DOCKET_STORE_TEST_APPEND=dir:n:session… <test binary>`: it appends
// n receipts to each session with Store.Append, alternating, as hooks do.
func TestMain(m *testing.M) {
	if spec := os.Getenv("DOCKET_STORE_TEST_APPEND"); spec != "" {
		os.Exit(appendProcess(spec))
	}
	os.Exit(m.Run())
}

func appendProcess(spec string) int {
	var dir, sessions string
	var n int
	if _, err := fmt.Sscanf(spec, "%s %d %s", &dir, &n, &sessions); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	st := Open(dir)
	key, err := st.Key()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for i := range n {
		session := string(sessions[i%len(sessions)])
		if _, err := st.Append(session, AppendOptions{}, signLink(key, session)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// signLink builds a decision receipt for a link.
func signLink(key ed25519.PrivateKey, session string) func(Link) ([]byte, error) {
	return func(l Link) ([]byte, error) {
		return receipts.Sign(key, receipts.Payload{Type: receipts.TypeDecision, SessionID: session, Sequence: l.Sequence,
			PreviousReceiptHash: l.Previous, IssuerSequence: l.IssuerSequence, HookEvent: receipts.PreToolUse,
			ToolName: "mcp__t__echo", Decision: receipts.Allow})
	}
}

// startAppendProcess starts another process appending n receipts to the
// store, to each session named by a letter of sessions in turn
// (appendProcess).
func startAppendProcess(t *testing.T, st *Store, n int, sessions string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DOCKET_STORE_TEST_APPEND="+st.Project()+" "+strconv.Itoa(n)+" "+sessions)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// waitWriters waits for the writers of this process (wg) and the other
// process, and fails on the first error any of them sent to errs.
func waitWriters(t *testing.T, wg *sync.WaitGroup, cmd *exec.Cmd, errs chan error) {
	t.Helper()
	wg.Wait()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the other process: %v", err)
	}
	close(errs)
	for err := range errs {
		t.Fatalf("Append: %v", err)
	}
}

// heldStore returns a new store with an issuer key, the key, and an
// Appender holding session "r".
func heldStore(t *testing.T) (*Store, ed25519.PrivateKey, *Appender) {
	t.Helper()
	st, _ := newKeyedStore(t)
	key, err := st.Key()
	if err != nil {
		t.Fatal(err)
	}
	a, err := st.Hold("r")
	if err != nil {
		t.Fatal(err)
	}
	return st, key, a
}

// checkIssuer verifies every chain of the store and that the issuer
// sequences of all its receipts are 1..want, each once, and that the
// appends journal names each receipt where its chain holds it.
func checkIssuer(t *testing.T, st *Store, key ed25519.PrivateKey, want int) {
	t.Helper()
	names, err := st.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, n := range names {
		lines, err := st.Receipts(n)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range receipts.VerifyChain(lines, receipts.Options{Keys: receipts.PinnedKey(key.Public().(ed25519.PublicKey)), SessionID: n}) {
			if r.Outcome != receipts.Valid {
				t.Fatalf("VerifyChain(%s): receipt %d = %v (%s: %s), want valid", n, i+1, r.Outcome, r.Cause, r.Detail)
			}
			rc, err := receipts.Open(lines[i], nil)
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, rc.Payload.IssuerSequence)
		}
	}
	slices.Sort(seqs)
	if len(seqs) != want {
		t.Fatalf("the store holds %d receipts, want %d", len(seqs), want)
	}
	for i, n := range seqs {
		if n != int64(i+1) {
			t.Fatalf("issuer sequences are not 1..%d exactly once: %v", want, seqs)
		}
	}
	out, _, err := st.Pending(Cursor{})
	if err != nil || len(out) != want {
		t.Fatalf("Pending(zero cursor) = %d receipts, %v; want %d", len(out), err, want)
	}
}

// An Appender holding a session shares the issuer and the session's chain
// with other writers: another Store in this process and another process,
// appending to the held session and to others at the same time.
func TestAppenderWithOtherWriters(t *testing.T) {
	st, key, a := heldStore(t)
	defer a.Close()
	if _, err := st.Hold("r"); err == nil {
		t.Fatal("Hold of a held session succeeded, want an error")
	}
	const perWriter = 60
	cmd := startAppendProcess(t, st, perWriter, "rh")
	var wg sync.WaitGroup
	errs := make(chan error, 3*perWriter)
	wg.Go(func() { // the relay's two loops: decisions and executions
		for range perWriter {
			if _, err := a.Append(AppendOptions{}, signLink(key, "r")); err != nil {
				errs <- err
			}
		}
	})
	wg.Go(func() {
		for range perWriter {
			if _, err := st.Append("r", AppendOptions{}, signLink(key, "r")); err != nil {
				errs <- err
			}
		}
	})
	wg.Go(func() { // a hook of this process: its own files
		other := Open(st.Project())
		for i := range perWriter {
			s := []string{"r", "h"}[i%2]
			if _, err := other.Append(s, AppendOptions{}, signLink(key, s)); err != nil {
				errs <- err
			}
		}
	})
	waitWriters(t, &wg, cmd, errs)
	checkIssuer(t, st, key, 4*perWriter)
}

// A held file that is deleted or replaced is not written to: the Appender
// opens the path again, so the counter, the chain and its journals stay
// those every other writer sees.
func TestAppenderFilesReplaced(t *testing.T) {
	for _, tt := range []struct {
		name  string
		paths func(*Store) []string
		// replace replaces the file with a copy (a new inode, the same
		// bytes); else it is deleted.
		replace bool
	}{
		{"issuer lock deleted", func(s *Store) []string { return []string{filepath.Join(s.dir, IssuerLockFile)} }, false},
		{"issuer journal deleted", func(s *Store) []string { return []string{filepath.Join(s.dir, IssuerJournalFile)} }, false},
		{"issuer journal replaced", func(s *Store) []string { return []string{filepath.Join(s.dir, IssuerJournalFile)} }, true},
		{"chain replaced", func(s *Store) []string { return []string{s.ChainPath("r")} }, true},
		{"head deleted", func(s *Store) []string { return []string{s.headPath("r")} }, false},
		{"head replaced", func(s *Store) []string { return []string{s.headPath("r")} }, true},
		{"appends journal deleted", func(s *Store) []string { return []string{filepath.Join(s.dir, AppendsFile)} }, false},
		{"all replaced", func(s *Store) []string {
			return []string{filepath.Join(s.dir, IssuerLockFile), filepath.Join(s.dir, IssuerJournalFile), s.ChainPath("r"),
				s.headPath("r"), filepath.Join(s.dir, AppendsFile)}
		}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, key, a := heldStore(t)
			defer a.Close()
			other := Open(st.Project())
			for range 3 {
				if _, err := a.Append(AppendOptions{}, signLink(key, "r")); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range tt.paths(st) {
				var err error
				if tt.replace {
					var data []byte
					if data, err = os.ReadFile(p); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p+".new", data, 0o600); err != nil {
						t.Fatal(err)
					}
					err = os.Rename(p+".new", p)
				} else {
					err = os.Remove(p)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			// Another writer appends after the change, then the holder.
			if _, err := other.Append("r", AppendOptions{}, signLink(key, "r")); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Append("h", AppendOptions{}, signLink(key, "h")); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := a.Append(AppendOptions{}, signLink(key, "r")); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := other.Append("h", AppendOptions{}, signLink(key, "h")); err != nil {
				t.Fatal(err)
			}
			checkIssuer(t, st, key, 8)
		})
	}
}

// A build that fails through an Appender leaves its issuer_sequence free
// for the next receipt, as Store.Append does.
func TestAppenderFailedBuild(t *testing.T) {
	st, key, a := heldStore(t)
	defer a.Close()
	for _, tt := range []struct {
		name    string
		fail    bool
		wantSeq int64
	}{
		{"first", false, 1},
		{"failing", true, 2},
		{"after the failure", false, 2},
		{"next", false, 3},
	} {
		var got int64
		_, err := a.Append(AppendOptions{}, func(l Link) ([]byte, error) {
			got = l.IssuerSequence
			if tt.fail {
				return nil, errors.New("build failed")
			}
			return signLink(key, "r")(l)
		})
		if (err != nil) != tt.fail || got != tt.wantSeq {
			t.Errorf("%s: Append = issuer_sequence %d, %v; want %d, failing %v", tt.name, got, err, tt.wantSeq, tt.fail)
		}
	}
	checkIssuer(t, st, key, 3)
}

// Through an Appender the input journal gets its entries; once it is
// closed the store appends file by file again and the Appender refuses.
func TestAppenderJournalAndClose(t *testing.T) {
	st, key, a := heldStore(t)
	var heads []Head
	for i := range 3 {
		h, err := st.Append("r", AppendOptions{Journal: &JournalEntry{ToolName: "mcp__t__echo", ToolInput: []byte(fmt.Sprintf(`{"n":%d}`, i))}}, signLink(key, "r"))
		if err != nil {
			t.Fatal(err)
		}
		heads = append(heads, h)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if _, err := a.Append(AppendOptions{}, signLink(key, "r")); !errors.Is(err, errClosed) {
		t.Errorf("Append after Close = %v, want %v", err, errClosed)
	}
	if _, err := st.Append("r", AppendOptions{}, signLink(key, "r")); err != nil {
		t.Fatalf("Store.Append after Close = %v", err)
	}
	got, errs := journalOf(t, st, "r")
	if len(errs) > 0 || len(got) != 3 {
		t.Fatalf("Journal = %+v, %v; want 3 entries", got, errs)
	}
	for i, e := range got {
		if e.ReceiptHash != heads[i].Hash || e.Sequence != int64(i+1) || string(e.ToolInput) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Errorf("entry %d = %+v, want receipt %s sequence %d", i, e, heads[i].Hash, i+1)
		}
	}
	checkIssuer(t, st, key, 4)
	if a2, err := st.Hold("r"); err != nil {
		t.Errorf("Hold after Close = %v", err)
	} else {
		a2.Close()
	}
}

// A store that holds its recent sessions (HoldRecent, the gate daemon's)
// keeps at most n open, hands one over to Hold, closes the idle ones, and
// stays correct beside other writers: another process and another Store
// appending to the same sessions while it moves between more sessions
// than it holds.
func TestHoldRecent(t *testing.T) {
	st, _ := newKeyedStore(t)
	key, err := st.Key()
	if err != nil {
		t.Fatal(err)
	}
	const held, perWriter = 2, 60
	st.HoldRecent(held)
	sessions := []string{"a", "b", "c"}
	cmd := startAppendProcess(t, st, perWriter, "abc")
	var wg sync.WaitGroup
	errs := make(chan error, 4*perWriter)
	for w := range 2 { // two calls of the daemon at once
		wg.Go(func() {
			for i := range perWriter {
				s := sessions[(i+w)%len(sessions)]
				if _, err := st.Append(s, AppendOptions{}, signLink(key, s)); err != nil {
					errs <- err
				}
				if n := recentHeld(st); n > held {
					errs <- fmt.Errorf("%d sessions held, want at most %d", n, held)
				}
			}
		})
	}
	wg.Go(func() { // a hook of this process: its own files
		other := Open(st.Project())
		for i := range perWriter {
			s := sessions[i%len(sessions)]
			if _, err := other.Append(s, AppendOptions{}, signLink(key, s)); err != nil {
				errs <- err
			}
		}
	})
	waitWriters(t, &wg, cmd, errs)
	checkIssuer(t, st, key, 4*perWriter)

	// Hold takes a session over from HoldRecent.
	if _, err := st.Append("a", AppendOptions{}, signLink(key, "a")); err != nil {
		t.Fatal(err)
	}
	a, err := st.Hold("a")
	if err != nil {
		t.Fatalf("Hold of a session HoldRecent holds = %v, want it handed over", err)
	}
	if _, err := st.Append("a", AppendOptions{}, signLink(key, "a")); err != nil {
		t.Fatal(err)
	}
	if n := recentHeld(st); n < 1 || n > held-1 {
		t.Errorf("with a handed over to Hold, %d sessions held by the store, want 1..%d", n, held-1)
	} else if got := st.ReleaseIdle(0); got != n {
		t.Errorf("ReleaseIdle(0) = %d, want %d", got, n)
	}
	if n := recentHeld(st); n != 0 {
		t.Errorf("after ReleaseIdle(0), %d sessions held by the store, want 0", n)
	}
	if _, err := a.Append(AppendOptions{}, signLink(key, "a")); err != nil {
		t.Errorf("Append through Hold's Appender after ReleaseIdle = %v", err)
	}
	a.Close()
	if _, err := st.Append("b", AppendOptions{}, signLink(key, "b")); err != nil {
		t.Fatal(err)
	}
	if got := st.ReleaseIdle(time.Hour); got != 0 {
		t.Errorf("ReleaseIdle(1h) right after an append = %d, want 0", got)
	}
	checkIssuer(t, st, key, 4*perWriter+4)
}

// recentHeld counts the sessions the store holds itself (HoldRecent).
func recentHeld(s *Store) int {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	n := 0
	for _, a := range s.held {
		if a.recent {
			n++
		}
	}
	return n
}
