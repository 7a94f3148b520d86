// Package logclient is the client side of a Docket log (DESIGN §3.5): it
// submits log entries (POST /add) and verifies the tlog-proof@v1 each one
// is answered with, and it reads the log back through the C2SP tlog-tiles
// API (the checkpoint, hash tiles, entry bundles), bounding every resource
// it reads.
//
// The shape is that of golang.org/x/mod/sumdb's Client: a [Client] holds the
// logic (batching, backoff, Retry-After, verification against the pinned
// log key and the witness policy, size caps) and reaches the log only
// through a small [ClientOps] interface. [HTTPOps] reaches a log over HTTP,
// [DirOps] reads a log's POSIX storage directory, and tests bring their own.
//
// Errors: a refusal that retrying cannot fix wraps [ErrRejected] (a
// *[StatusError] carries the status and the log's error code); a proof that
// does not verify wraps [ErrBadProof] and the c2sp error that carries its
// evidence; a resource larger than its cap wraps [ErrTooLarge]; a resource
// the log does not have wraps fs.ErrNotExist. Anything else (the network,
// 429, 5xx) is retried until the context ends.
//
// A Client is safe for concurrent use.
package logclient
