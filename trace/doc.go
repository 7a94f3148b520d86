// Package trace exports a Docket session as a TRACE Trust Record
// (agentrust-io/trace-spec, trace-v0.2) and verifies such records.
//
// A record is built from a session chain: ReadSession turns the chain into
// a tool transcript (one Call per tool call, each carrying the chain hashes
// of its decision and execution receipts), MarshalTranscript gives the
// transcript's canonical bytes, New fills every claim of the record from
// what Docket holds (the policy digest the calls were decided under, the
// exporting binary's hash as a software-only measurement, the docket audit
// appraisal, the tlog-proof of the session's last receipt), and Sign signs
// it as trace-v0.2 §3.2.2 requires: Ed25519 over the RFC 8785 (JCS) bytes of
// the record without its signature member, by the key in cnf.jwk.
//
// Verify checks a record with trusted keys only, hashes the transcript's
// raw bytes (never a re-serialization), replays the receipts behind every
// transcript entry and checks the log proof. A record signed over the bytes
// of Python's json.dumps(sort_keys=True), as TRACE signers did before
// trace-spec switched to RFC 8785, is reported as such (LegacyForms).
//
// [Export] writes the record of a session of a project's store, with the
// transcript, the chain and the last receipt's proof beside it, and
// appraises it with docket audit against the store's log; [Fetcher.Evidence]
// finds a record's evidence for verification (the files named, its URIs,
// or the files next to it), every read bounded by what the record claims.
//
// What a record proves and what it only declares is described in
// docs/trace.md.
package trace
