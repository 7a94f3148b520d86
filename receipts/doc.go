// Package receipts implements Docket's signed, hash-chained receipts: the
// draft-farley-acta-signed-receipts-04 envelope, RFC 8785 JSON canonicalization
// (JCS), Ed25519 signing (RFC 8032), session chains, the acta-policy-digest-v1
// construction, the transparency-log entry, and offline verification with three
// outcomes (valid, invalid, undecidable).
//
// The package depends only on the standard library and filippo.io/edwards25519
// (for signing without crypto/ed25519's start-up tables, see sign), so that
// third parties can import it to verify receipts without pulling in a log or
// a policy engine.
//
// A receipt is
//
//	{"payload": {...}, "signature": {"alg": "EdDSA", "kid": "sb:issuer:…", "sig": "<hex>"}}
//
// where sig is Ed25519 over the UTF-8 bytes of JCS(payload), and
// payload.previousReceiptHash is "sha256:" + hex SHA-256 of JCS(the whole
// previous receipt, signature included).
//
// Verification also accepts the other receipt shapes in use: the flat shape and
// the v1 and v2 artifacts (signature over JCS(receipt minus "signature")), and
// the chain links of earlier drafts (bare hex, payload-only), which it reports
// as legacy.
//
// [Open] is how a Docket receipt is read: strictly parsed (duplicate and
// case-folded member names refused), verified against the given keys, and
// its payload typed as a [Payload]. Verify and VerifyChain report the three
// outcomes for any shape. The strict JSON parser and JCS live in the
// module's internal/strictjson; Parse, ParseObject and Canonicalize are
// kept here for third parties.
//
// Keys are never taken from inside a receipt: a verifier supplies them out of
// band as a [KeySet].
package receipts
