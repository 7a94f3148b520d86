package hookd

import (
	"syscall"
	"unsafe"
)

// ExeID identifies the running executable by device, inode, size and
// modification and change times, so that a daemon of a docket binary that
// was since replaced declines the hooks of the new one.
func ExeID() ([5]int64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return [5]int64{}, err
	}
	return [5]int64{int64(st.Dev), int64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano()}, nil
}

// PeerUID returns the user id of the process at the other end of the unix
// socket fd (SO_PEERCRED).
func PeerUID(fd int) (int, error) {
	cred, err := syscall.GetsockoptUcred(fd, syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}

// Supported reports whether hooks can be forwarded on this system: Linux
// (SO_PEERCRED, /proc/self/exe).
const Supported = true

// answerWithin bounds the wait for the daemon's exit code, in seconds: the
// hook's default deadline (10 s, within which the daemon's own hook blocks
// the call) and a margin. The agents run a call whose hook timed out, so
// the hook must answer first.
const answerWithin = 12

// sendWithin bounds sending the request, in seconds.
const sendWithin = 2

// Forward hands the hook of this process (its arguments after "docket
// hook", and its standard streams) to the daemon of its project, and
// returns the exit code the daemon answered, with ok true. ok false means
// nothing was read from standard input and the caller must run the hook
// itself. A daemon that took the request and gave no exit code makes the
// hook block: Forward prints why and returns 2 with ok true. start is when
// the hook process started, Unix nanoseconds.
//
// It uses only package syscall, so that it can run before package os is
// initialised.
//
// A post hook never loses its event to the daemon: the client reads the
// event first (Stdin) and sends the bytes; unless the daemon answers an
// exit code, Forward returns ok false and the caller receipts the event
// itself, reading Stdin before the rest of its standard input. A daemon
// that died after appending the execution leaves it receipted twice, never
// lost.
func Forward(args []string, start int64) (code int, ok bool) {
	dir, _ := syscall.Getenv("CLAUDE_PROJECT_DIR")
	wd, err := syscall.Getwd()
	if err != nil {
		return 0, false
	}
	if dir == "" {
		dir = wd
	}
	if len(dir) == 0 || dir[0] != '/' {
		return 0, false // relative: the in-process hook resolves it
	}
	path := SocketPath(dir)
	if len(path) > maxPath {
		return 0, false
	}
	var st syscall.Stat_t
	if syscall.Fstat(0, &st) != nil || st.Mode&syscall.S_IFMT == syscall.S_IFCHR {
		return 0, false // a terminal, or no stdin: the in-process hook says so
	}
	exe, err := ExeID()
	if err != nil {
		return 0, false
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	defer syscall.Close(fd)
	if syscall.Connect(fd, &syscall.SockaddrUnix{Name: path}) != nil {
		return 0, false
	}
	// Only a daemon of this user: anyone else who could bind the socket
	// could answer "allow".
	if uid, err := PeerUID(fd); err != nil || uid != syscall.Getuid() {
		return 0, false
	}
	post := Post(args)
	var in []byte
	if post {
		var complete bool
		in, complete = readStdin()
		Stdin, StdinRead = in, true
		if !complete {
			return 0, false // too long, or not closed in time: the hook says so
		}
	}
	// noAnswer is a daemon that read the whole request and gave no exit
	// code: a pre hook blocks, a post hook receipts its event itself.
	noAnswer := func(why string) (int, bool) {
		if post {
			return 0, false
		}
		return blocked(why)
	}
	send := syscall.Timeval{Sec: sendWithin}
	if syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &send) != nil {
		return 0, false
	}
	req := (&Request{Start: start, Exe: exe, Dir: wd, Args: args, Env: syscall.Environ(), Piped: post, Stdin: in}).Encode()
	// The daemon acts only on a whole request: a failure while sending
	// leaves nothing done.
	n, err := syscall.SendmsgN(fd, req, syscall.UnixRights(0, 1, 2), nil, 0)
	if err != nil {
		return 0, false
	}
	for n < len(req) {
		m, err := syscall.Write(fd, req[n:])
		if err != nil || m <= 0 {
			return 0, false
		}
		n += m
	}
	tv := syscall.Timeval{Sec: answerWithin}
	if syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv) != nil {
		return noAnswer("setting the answer timeout")
	}
	var reply [2]byte
	got := 0
	for got < len(reply) {
		// A raw read: the runtime does not see this thread enter a
		// blocking system call, so it starts no second thread to run
		// the goroutines of a process that has none to run.
		m, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&reply[got])), uintptr(len(reply)-got))
		if errno == syscall.EINTR {
			continue
		}
		if errno == syscall.ECONNRESET && got == 0 {
			// Closed with bytes of the request unread, or never
			// accepted (a daemon that exited with hooks queued on its
			// socket): it never ran the hook, which acts only on a
			// whole request.
			return 0, false
		}
		if errno != 0 || m == 0 {
			return noAnswer("it took the call and gave no answer")
		}
		got += int(m)
	}
	switch reply[0] {
	case replyExit:
		return int(reply[1]), true
	case replyDecline:
		return 0, false
	}
	return noAnswer("its answer is malformed")
}

// readWithin bounds reading a post hook's event, in milliseconds: the
// hook's default deadline.
const readWithin = 10_000

// pollFd is struct pollfd.
type pollFd struct {
	fd              int32
	events, revents int16
}

// readStdin reads standard input to its end, up to MaxStdin+1 bytes and
// for at most readWithin, and reports whether it read it all.
func readStdin() (data []byte, complete bool) {
	var tv syscall.Timeval
	_ = syscall.Gettimeofday(&tv)
	end := tv.Nano()/1e6 + readWithin
	buf := make([]byte, 0, 16<<10)
	for len(buf) <= MaxStdin {
		_ = syscall.Gettimeofday(&tv)
		left := end - tv.Nano()/1e6
		if left <= 0 {
			return buf, false
		}
		pfd := pollFd{fd: 0, events: 1} // POLLIN
		ts := syscall.Timespec{Sec: left / 1000, Nsec: left % 1000 * 1e6}
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return buf, false
		}
		if n == 0 {
			return buf, false // timed out
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := syscall.Read(0, buf[len(buf):min(cap(buf), MaxStdin+1)])
		if err == syscall.EINTR || err == syscall.EAGAIN {
			continue
		}
		if err != nil {
			return buf, false
		}
		if m == 0 {
			return buf, true
		}
		buf = buf[:len(buf)+m]
	}
	return buf, false // longer than any event the hook takes
}

// blocked reports a daemon that may have taken the call without answering:
// the hook blocks it.
func blocked(why string) (int, bool) {
	msg := "docket: the gate daemon (.docket/" + SocketName + ") " + why + ": the call is blocked (fail closed)\n"
	_, _ = syscall.Write(2, []byte(msg))
	return 2, true
}
