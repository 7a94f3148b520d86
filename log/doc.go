// Package log is Docket's transparency log: a Tessera personality that
// admits receipts (DESIGN §3.4), appends each distinct entry exactly once,
// waits for a published checkpoint that covers it, and answers with a
// C2SP tlog-proof@v1 (https://c2sp.org/tlog-proof) carrying the checkpoint
// verbatim, with its witness cosignatures when a C2SP tlog-policy is
// configured. It also serves the C2SP tlog-tiles read API
// (https://c2sp.org/tlog-tiles) and /health.
//
// Storage. The log runs over any Tessera driver (Config.Driver) and reads
// the log back only through tessera.LogReader: checkpoints, hash tiles and
// entry bundles. Package posix opens Tessera's POSIX driver with a SQLite
// dedup index and a directory lock; another backend supplies its own
// driver and Index.
//
// Strict dedup. Tessera's antispam is best effort, so the log keeps its own
// index from RFC 6962 leaf hash to index (see Index for its contract). The
// index is derived from the log: a follower reads entry bundles in order
// and commits the hashes together with the number of entries covered, so
// an index that falls behind (a crash, a deleted file) is rebuilt from the
// log before the server accepts writes. Entries sequenced by this process
// but not yet followed are held in memory, and concurrent identical
// submissions share one append.
//
// Latency. The log hands Tessera one batch at a time and polls the
// published checkpoint (cheaply) while requests wait, and builds inclusion
// proofs from hash tiles with one cached proof builder per checkpoint.
//
// The HTTP edge. Every answer that is not a proof or a tlog-tiles resource
// is a JSON error (Handler, and ConnLimiter for the answers net/http gives
// itself); a body declared too large is refused unread. Health reports
// whether the log can accept entries (its writes to storage succeed, and
// the storage's probe) and serve them (the published checkpoint in storage
// reads and verifies, and is fresh). ConnLimiter keeps the connections
// already being served in place through a burst, refusing new ones with
// 503 and Retry-After.
//
// Batches. POST /add also takes a JSON array of entries (AddBatch; the
// form DESIGN §3.5 allows): the batch is bounded as one entry is and
// admitted whole, each entry is then judged and deduplicated alone and
// answered with its own proof or error, so a client pays one request, and
// the log one HTTP exchange, for many entries.
package log
