package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// AppendsFile is the store's journal of appends: one line per receipt
// appended, in issuer_sequence order, which `docket sync` reads from where
// it stopped (its cursor, see Pending) instead of reading every chain.
const AppendsFile = "appends.journal"

// An appendRecord is one line of the appends journal:
//
//	<issuer_sequence> <sequence> <offset> <session name>\n
//
// naming the receipt appended with that issuer_sequence: its session chain
// (a SessionName), its sequence in it and the byte offset of its line.
type appendRecord struct {
	issuerSeq int64
	Ref
}

// maxAppendLine bounds one line of the appends journal: three int64s, a
// session name (at most 100 bytes) and separators.
const maxAppendLine = 3*20 + 100 + 4

func (r appendRecord) marshal() []byte {
	b := make([]byte, 0, 64)
	b = strconv.AppendInt(b, r.issuerSeq, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, r.Sequence, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, r.offset, 10)
	b = append(b, ' ')
	b = append(b, r.Session...)
	return append(b, '\n')
}

// parseAppendRecord parses one line of the appends journal, without its
// newline. It accepts only what marshal writes.
func parseAppendRecord(line []byte) (appendRecord, error) {
	var r appendRecord
	fields := bytes.Split(line, []byte(" "))
	if len(fields) != 4 || len(line) > maxAppendLine {
		return r, errors.New("appends journal: malformed line")
	}
	nums := [3]*int64{&r.issuerSeq, &r.Sequence, &r.offset}
	for i, p := range nums {
		n, err := strconv.ParseInt(string(fields[i]), 10, 64)
		if err != nil || n < 0 || strconv.FormatInt(n, 10) != string(fields[i]) {
			return r, errors.New("appends journal: malformed number")
		}
		*p = n
	}
	r.Session = string(fields[3])
	if r.issuerSeq < 1 || r.Sequence < 1 || !safeName(r.Session) {
		return r, errors.New("appends journal: malformed line")
	}
	return r, nil
}

// journalAppend records an appended receipt in the appends journal. It is
// called under the issuer lock, after the receipt is in its chain and
// before the issuer journal notes it done, so the journal's lines follow
// issuer_sequence. The line is not fsynced: after a crash the journal may
// lack it, which Pending detects (its issuer_sequence is missing) and
// repairs from the chains.
//
// It is on every hook's path, so it makes three system calls and no more:
// an *os.File would add the poller's.
func (s *Store) journalAppend(r appendRecord) error {
	fd, err := s.openAppends()
	if err != nil {
		return err
	}
	return errors.Join(writeAppendRecord(fd, r), syscall.Close(fd))
}

// openAppends opens the appends journal for appending and returns its
// descriptor.
func (s *Store) openAppends() (int, error) {
	fd, err := syscall.Open(filepath.Join(s.dir, AppendsFile), syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return -1, fmt.Errorf("appends journal: %w", err)
	}
	return fd, nil
}

// writeAppendRecord writes r as one line to the appends journal open as fd.
func writeAppendRecord(fd int, r appendRecord) error {
	line := r.marshal()
	n, err := syscall.Write(fd, line)
	if err == nil && n != len(line) {
		err = io.ErrShortWrite
	}
	return err
}

// appendsSize returns the size of the appends journal, 0 when there is none.
func (s *Store) appendsSize() (int64, error) {
	fi, err := os.Stat(filepath.Join(s.dir, AppendsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// readAppends returns the records of the appends journal between byte
// offsets from and to, which must be line boundaries. A line that does not
// parse is an error: the caller then rebuilds from the chains.
func (s *Store) readAppends(from, to int64) ([]appendRecord, error) {
	if from == to {
		return nil, nil
	}
	f, err := os.Open(filepath.Join(s.dir, AppendsFile))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, to-from)
	if _, err := f.ReadAt(data, from); err != nil {
		return nil, fmt.Errorf("appends journal: %w", err) // cut short since
	}
	if data[len(data)-1] != '\n' {
		return nil, errors.New("appends journal: not at a line boundary")
	}
	var out []appendRecord
	for line := range bytes.Lines(data) {
		r, err := parseAppendRecord(line[:len(line)-1])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
