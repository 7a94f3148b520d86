// Package hookd is the protocol between `docket hook pre` (and `post`,
// `post-failure`) and the project's gate daemon (`docket hookd`), a
// long-lived docket process that keeps the policy parsed and its recent
// sessions' files open between calls.
//
// The hook process does almost nothing itself: it connects to the
// project's socket (.docket/hookd.sock), passes its standard input, output
// and error (SCM_RIGHTS) with its arguments, working directory, environment
// and the identity of its executable, and exits with the code the daemon
// answers. The daemon runs the same hook code on those descriptors, so the
// agent sees the same bytes and the same exit code as from an in-process
// hook. A post hook reads its event first and sends the bytes instead of
// its standard input, and keeps them: unless the daemon answers an exit
// code, it receipts the event in its own process (Stdin), so that an
// execution is never lost to a daemon that died holding it.
//
// Fail closed:
//   - No daemon, a socket that does not answer, a peer of another user, or
//     a request the daemon declines (another executable, another working
//     directory or environment): nothing was read from standard input, and
//     the hook decides in its own process (the daemon never decides for a
//     request it declined).
//   - A connection reset before any answer: the daemon closed it with
//     bytes of the request unread (Linux resets a unix socket closed with
//     data in its queue, and the hooks still queued on a listener that
//     closes), so it never ran the hook: a daemon exiting (idle, or giving
//     way to another binary or environment) with hooks queued on its
//     socket. The hook decides in-process.
//   - A daemon that took the request and gave no exit code (it closed the
//     connection after reading the request, died, or did not answer within
//     the hook's deadline): the call may have been read and recorded, so
//     the hook blocks it (exit 2).
//
// The client side ([Forward]) imports only os and syscall, so that it can
// run from the init of a package the docket binary initialises before
// everything else (internal/hookd/fast): a forwarded hook never
// initialises Cedar, the shell parser, net/http or the log's storage.
package hookd

import (
	"errors"
	"syscall"
)

// SocketName is the daemon's socket, in the project's .docket directory.
const SocketName = "hookd.sock"

// LockName is the lock a daemon holds while it serves the project: one
// daemon per project.
const LockName = "hookd.lock"

// Fast reports whether the running binary forwards hooks to the daemon
// (the package internal/hookd/fast is linked and sets it): only then does
// an in-process hook start a daemon for the next ones. The test binaries
// that answer as docket do not.
var Fast bool

// Reply bytes: the daemon ran the hook (an exit code follows), or declined
// the request without reading anything (the hook decides in-process).
const (
	replyExit    = 'X'
	replyDecline = 'F'
)

// magic starts every request.
const magic = "DKH1"

// maxRequest bounds a request (arguments, environment and a post hook's
// event).
const maxRequest = 4 << 20

// MaxStdin is the most of a post hook's event the client reads and sends:
// the hook's own bound (hook.MaxInput, held equal by a test). A longer
// event is the in-process hook's to refuse.
const MaxStdin = 1 << 20

// Stdin is what the client read of its standard input before it gave the
// hook back to this process (a post hook the daemon did not answer), and
// StdinRead whether it read any: the in-process hook reads Stdin first,
// then the rest of its standard input.
var (
	Stdin     []byte
	StdinRead bool
)

// maxPath is the longest socket path a sockaddr_un holds.
const maxPath = 107

// Request is one forwarded hook.
type Request struct {
	Start int64    // the hook process's start, Unix nanoseconds
	Exe   [5]int64 // the identity of its executable (see ExeID)
	Dir   string   // its working directory
	Args  []string // its arguments after "docket hook"
	Env   []string // its environment
	// Piped is set for a post hook: its event is Stdin, which the client
	// read and keeps, so that it can receipt the event itself when the
	// daemon does not answer. A pre hook's standard input is the
	// descriptor passed with the request.
	Piped bool
	Stdin []byte
}

// Forwardable reports whether the arguments after "docket hook" are those
// of a hook the daemon may run: "pre", "post" or "post-failure" with at
// most an -agent flag. Anything else (a session hook, -deadline, -h, a bad
// flag) runs in-process.
func Forwardable(args []string) bool { return kindOf(args) != "" }

// Post reports whether the arguments after "docket hook" are those of a
// forwardable post hook ("post" or "post-failure").
func Post(args []string) bool {
	k := kindOf(args)
	return k == "post" || k == "post-failure"
}

// kindOf returns the hook of a forwardable command line, "" for another.
func kindOf(args []string) string {
	kind := ""
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "pre" || a == "post" || a == "post-failure") && kind == "":
			kind = a
		case (a == "-agent" || a == "--agent") && i+1 < len(args):
			i++
		case len(a) > 7 && a[:7] == "-agent=" || len(a) > 8 && a[:8] == "--agent=":
		default:
			return ""
		}
	}
	return kind
}

// SocketPath returns the daemon's socket of the project rooted at dir.
func SocketPath(dir string) string { return dir + "/.docket/" + SocketName }

// Encode returns the request's bytes on the wire.
func (r *Request) Encode() []byte {
	b := make([]byte, 0, 256)
	b = append(b, magic...)
	b = append(b, 0, 0, 0, 0) // length, set below
	b = putU64(b, uint64(r.Start))
	for _, v := range r.Exe {
		b = putU64(b, uint64(v))
	}
	b = putString(b, r.Dir)
	b = putU32(b, uint32(len(r.Args)))
	for _, a := range r.Args {
		b = putString(b, a)
	}
	b = putU32(b, uint32(len(r.Env)))
	for _, e := range r.Env {
		b = putString(b, e)
	}
	if r.Piped {
		b = putU32(b, 1)
		b = append(putU32(b, uint32(len(r.Stdin))), r.Stdin...)
	} else {
		b = putU32(b, 0)
	}
	n := uint32(len(b) - 8)
	b[4], b[5], b[6], b[7] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return b
}

// ErrRequest is a request that is not well formed.
var ErrRequest = errors.New("malformed hook request")

// RequestLen returns the total length of the request whose first 8 bytes
// are head, or an error when they cannot start one.
func RequestLen(head []byte) (int, error) {
	if len(head) < 8 || string(head[:4]) != magic {
		return 0, ErrRequest
	}
	n := int(head[4])<<24 | int(head[5])<<16 | int(head[6])<<8 | int(head[7])
	if n > maxRequest {
		return 0, ErrRequest
	}
	return 8 + n, nil
}

// DecodeRequest parses a whole request (as RequestLen measured it).
func DecodeRequest(b []byte) (*Request, error) {
	n, err := RequestLen(b)
	if err != nil || n != len(b) {
		return nil, ErrRequest
	}
	d := decoder{b: b[8:]}
	r := &Request{Start: int64(d.u64())}
	for i := range r.Exe {
		r.Exe[i] = int64(d.u64())
	}
	r.Dir = d.str()
	r.Args = d.strs()
	r.Env = d.strs()
	switch d.u32() {
	case 0:
	case 1:
		r.Piped = true
		r.Stdin = d.take(int(d.u32()))
	default:
		d.bad = true
	}
	if d.bad || len(d.b) != 0 {
		return nil, ErrRequest
	}
	return r, nil
}

type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) take(n int) []byte {
	if d.bad || n < 0 || n > len(d.b) {
		d.bad = true
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) u32() uint32 {
	p := d.take(4)
	if p == nil {
		return 0
	}
	return uint32(p[0])<<24 | uint32(p[1])<<16 | uint32(p[2])<<8 | uint32(p[3])
}

func (d *decoder) u64() uint64 { return uint64(d.u32())<<32 | uint64(d.u32()) }

func (d *decoder) str() string { return string(d.take(int(d.u32()))) }

func (d *decoder) strs() []string {
	n := int(d.u32())
	if n > len(d.b)/4 { // each string takes at least its length
		d.bad = true
		return nil
	}
	out := make([]string, 0, n)
	for range n {
		out = append(out, d.str())
	}
	return out
}

func putU32(b []byte, v uint32) []byte {
	return append(b, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

func putU64(b []byte, v uint64) []byte { return putU32(putU32(b, uint32(v>>32)), uint32(v)) }

func putString(b []byte, s string) []byte { return append(putU32(b, uint32(len(s))), s...) }

// ExitReply is the daemon's answer for a hook it ran: the exit code.
func ExitReply(code int) []byte { return []byte{replyExit, byte(code)} }

// DeclineReply is the daemon's answer for a request it did not run.
func DeclineReply() []byte { return []byte{replyDecline, 0} }

// Stop sends SIGTERM to the gate daemon of the project rooted at dir, if
// its lock file (LockName) names one, and reports whether it did. (Tests
// and benchmarks stop the daemons their hooks started with it; a user
// removes the socket.)
func Stop(dir string) bool {
	fd, err := syscall.Open(dir+"/.docket/"+LockName, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	var buf [32]byte
	n, _ := syscall.Read(fd, buf[:])
	syscall.Close(fd)
	pid := 0
	for _, c := range buf[:max(n, 0)] {
		if c < '0' || c > '9' {
			break
		}
		pid = pid*10 + int(c-'0')
	}
	return pid > 0 && syscall.Kill(pid, syscall.SIGTERM) == nil
}
