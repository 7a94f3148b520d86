// Package log is Docket's transparency log: a Tessera personality that
// admits receipts (DESIGN §3.4), appends each distinct entry exactly once,
// waits for a published checkpoint that covers it, and answers with a
// C2SP tlog-proof@v1 (https://c2sp.org/tlog-proof) carrying the checkpoint
// verbatim, with its witness cosignatures when a C2SP tlog-policy is
// configured. It also serves the C2SP tlog-tiles read API
// (https://c2sp.org/tlog-tiles) from Tessera's POSIX storage, and /health.
//
// Strict dedup. Tessera's antispam is best effort, so the log keeps its own
// index from RFC 6962 leaf hash to index in SQLite. The index is derived
// from the log: a follower reads entry bundles in order and commits the
// hashes together with the number of entries covered, so an index that
// falls behind (a crash, a deleted file) is rebuilt from the log before the
// server accepts writes. Entries sequenced by this process but not yet
// followed are held in memory, and concurrent identical submissions share
// one append.
//
// Latency. Tessera's POSIX driver integrates a batch inline and then
// publishes at most once per checkpoint interval; the log polls the
// published checkpoint (cheaply, a small file) while requests wait, and
// builds inclusion proofs from local tiles with one cached proof builder per
// checkpoint.
package log
