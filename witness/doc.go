// Package witness implements a transparency log witness: the server side of
// the C2SP tlog-witness protocol (https://c2sp.org/tlog-witness), producing
// C2SP tlog-cosignature cosignature/v1 Ed25519 cosignatures
// (https://c2sp.org/tlog-cosignature) over C2SP tlog-checkpoint checkpoints
// (https://c2sp.org/tlog-checkpoint) that are C2SP signed notes
// (https://c2sp.org/signed-note).
//
// A [Witness] is configured with the logs it witnesses, as the "log <vkey> [url]"
// lines of a C2SP tlog-policy file (https://c2sp.org/tlog-policy, see
// [ParseLogs]; the file is checked by c2sp.ParsePolicy, so it needs its
// quorum line, "quorum none" when it only lists logs). For each log,
// identified by its origin line (the name of its key), it keeps in a SQLite database the latest checkpoint it cosigned, and
// cosigns a new checkpoint only if a Merkle consistency proof (RFC 6962,
// Section 2.1.2) shows that it extends that one.
//
// # HTTP interface
//
//	POST /add-checkpoint           tlog-witness add-checkpoint
//	GET  /<hex sha256(origin)>/checkpoint
//	                                the latest checkpoint cosigned for that log,
//	                                with the log's signatures and this witness's
//	                                cosignature
//	GET  /evidence[?after=ID]       evidence of log misbehaviour, JSON
//	GET  /health                    200 when the database answers
//
// add-checkpoint answers, in the order the checks run:
//
//	413  the body is larger than Config.MaxBodySize: at once, unread, when
//	     its Content-Length says so (on every path), else when reading it
//	     passes the limit
//	400  malformed request, malformed checkpoint, more than 63 proof lines,
//	     or old size larger than the checkpoint size
//	404  the checkpoint's origin is not a configured log
//	403  no signature from a configured key of that log verifies, or one of
//	     them is invalid
//	429  the per-log rate limit is exceeded (Retry-After is set)
//	409  old differs from the size of the latest cosigned checkpoint; the body
//	     is that size and a newline, with Content-Type text/x.tlog.size
//	422  the consistency proof does not verify, or the checkpoint has the size
//	     of the latest cosigned checkpoint but another root hash (a fork);
//	     the request is stored as evidence (once per checkpoint the log
//	     signed) and nothing is cosigned. Also 422, with nothing stored: a
//	     checkpoint of size 0 whose root is not SHA-256 of the empty string,
//	     a non-empty proof from old 0 (checked after 409), and a non-empty
//	     proof between two identical trees
//	200  the cosignature line(s), after the checkpoint was durably recorded
//	500  database or signing failure; 503 if the request was cancelled
//
// # Persistence and concurrency
//
// Checking old against the recorded size and recording the new checkpoint
// happen in one SQLite transaction (BEGIN IMMEDIATE, serialized in process by
// a mutex), committed with synchronous=FULL before the answer is written. Of
// many concurrent requests from the same old size, exactly one advances the
// log; the others get 409 with the new size.
//
// # Performance
//
// Every accepted checkpoint costs one fsync, which bounds throughput. On the
// 2-core development machine (ext4), over loopback HTTP:
//
//	go test -run '^$' -bench AddCheckpoint -benchtime 3000x -count 3 ./witness
//
//	1 log, sequential requests:  p50 1.0-1.2 ms, p99 4.5-6.3 ms, 645-800 requests/s
//	8 logs, concurrent requests: p50 7.5-7.8 ms, p99 24-27 ms, ~910 requests/s
//
// A log asks a witness once per published checkpoint (plus one retry after a
// 409), so a witness serves hundreds of logs publishing every second.
package witness
