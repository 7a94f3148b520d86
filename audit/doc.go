// Package audit reads a Docket log back, for people who do not trust its
// operator (DESIGN §6).
//
// [Scan] streams a log's entries through the C2SP tlog-tiles API or its
// storage directory, verifies every entry (strict form, kid, Ed25519
// signature) on all cores and recomputes the tree root, so that a fetch
// path that adds, drops, reorders or alters an entry cannot go unnoticed.
// [Run] is the auditor: it compares the log with the session chains it was
// shown and reports what was dropped, withheld or equivocated, gaps in the
// issuers' own issuer_sequence, chain breaks and unlinked executions. It
// parses and verifies each receipt once (a presented receipt byte for byte
// a logged one is checked from the log's record of it) and keeps a ledger of
// fixed-size records, about 130 bytes per entry whatever the entries
// hold; with Config.StateDir the ledger is kept, and the next audit reads
// only the entries added since.
// [Monitor] follows a log over time: checkpoint quorum and consistency,
// every new entry, and the witnesses' views. [IssuerIndex] is one issuer's
// verifiable list of entries.
//
// Every finding the log's signatures can prove comes with [Evidence]:
// signed checkpoints, entries with inclusion proofs, and for a fork a
// consistency path taken from the newer tree's own tiles.
// [VerifyEvidence] checks it with the log's public key alone.
package audit
