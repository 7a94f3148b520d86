package log

import "context"

// An Index is a log's strict dedup index: the RFC 6962 leaf hash of every
// entry in a prefix of the log, with the entry's index, and the size of
// that prefix (the number of entries it covers). The log derives it from
// its own entries: it adds each run of entries once Tessera has sequenced
// them, catches up from the entry bundles at start, and truncates it when
// the log is shorter (storage restored from an older copy). The POSIX
// storage's index is in SQLite (see the posix package); logtest.TestIndex
// checks an implementation against this contract.
//
// The contract:
//
//   - Covered returns n such that the index holds exactly the entries
//     0 … n-1. A new index covers 0 entries.
//   - Add(from, hashes) records hashes[i] for entry from+i and makes Covered
//     from+len(hashes), atomically: after a crash either all of it or none
//     of it is visible. It fails, changing nothing, unless Covered is from,
//     so that a stale or concurrent writer cannot leave a gap or an
//     overlap. A hash already held keeps its first index; Add returns the
//     indices of the entries whose hash it already held (duplicates in the
//     log, which strict dedup should make impossible).
//   - Lookup(h) returns the smallest index of an entry with leaf hash h, if
//     the index holds one. Once Add has returned, Lookup finds every hash
//     it added (in any process sharing the index).
//   - Truncate(size) forgets every entry at or after size and makes Covered
//     size, atomically. It fails, changing nothing, if size is greater
//     than Covered: that would claim entries the index does not hold.
//
// Lookup may be called concurrently with everything; the log calls Add and
// Truncate from one goroutine at a time.
type Index interface {
	Lookup(ctx context.Context, h [32]byte) (index uint64, ok bool, err error)
	Covered(ctx context.Context) (uint64, error)
	Add(ctx context.Context, from uint64, hashes [][32]byte) (dups []uint64, err error)
	Truncate(ctx context.Context, size uint64) error
}

// leafHash is the RFC 6962 leaf hash of a log entry.
type leafHash = [32]byte

// A Claimer is an Index that several log processes write at once (the
// mysql package's). Instead of looking an entry up, the log claims its
// hash before appending it, so that two processes never append the same
// entry: Claim returns the entry's index if the index holds it (waiting
// while another live writer holds the claim), or found false once this
// process holds the claim. Add ends the claims on the
// hashes it records; Release ends one whose append failed, but only once
// it knows the entry was not appended after all (a commit whose answer was
// lost may have appended it): until then the claim stays.
type Claimer interface {
	Claim(ctx context.Context, h [32]byte) (index uint64, found bool, err error)
	Release(ctx context.Context, h [32]byte) error
}
