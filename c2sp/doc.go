// Package c2sp is Docket's client-side glue for the C2SP transparency log
// specifications (https://c2sp.org): the one strict parser of tlog-policy
// files and the quorum check it defines ([ParsePolicy]), signed-note and
// cosignature/v1 keys ([GenerateKeyFile], [LoadSigner], [NewCosigner]), the
// log ID a tlog-witness serves a log's checkpoint under ([LogID]), offline
// verification of tlog-proof@v1 proofs ([ProofVerifier]) and consistency
// between two checkpoints of one log ([CheckConsistency]).
//
// Security failures are typed and carry their evidence: an
// [*InclusionError] holds the signed checkpoint, the leaf, its index and the
// proof; an [*InconsistencyError] holds both signed checkpoints and the
// consistency proof, and prints them in the style of the Go checksum
// database client's SECURITY ERROR, so a report built from one needs nothing
// else.
//
// The package links neither SQLite nor Tessera: the command-line verifier
// imports it. Its functions and types are safe for concurrent use.
package c2sp
