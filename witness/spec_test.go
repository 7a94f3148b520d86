package witness

import (
	"net/http"
	"testing"

	"github.com/docketlog/docket/c2sp"
)

// The MUSTs of C2SP tlog-witness (add-checkpoint and the monitoring
// checkpoint) and the test that holds each. Cases named "TestAddCheckpoint/x"
// are rows of that table test; every refused row also checks that the
// served checkpoint did not change (nothing cosigned, nothing stored).
//
//	MUST                                                         test
//	the request is an HTTP POST                                  TestReadEndpoints/add-checkpoint_is_POST_only
//	body: old line, proof lines, empty line, checkpoint          TestParseAddRequest (no empty line, no checkpoint), TestAddCheckpoint/malformed:_empty_body
//	each line ends in a newline                                  TestParseAddRequest/CRLF, TestParseAddRequest/hash_with_CR
//	"old" SP decimal, no leading zeroes                          TestParseAddRequest (leading zero, plus sign, no space, two spaces)
//	each proof line is one base64 hash                           TestParseAddRequest (short hash, non-canonical base64)
//	at most 63 proof lines                                       TestParseAddRequest/64_lines, TestAddCheckpoint/malformed:_64_proof_lines
//	verify the checkpoint against the origin's trusted keys      TestAddCheckpoint/signature_over_another_size, TestSetLogs (rotated key)
//	ignore signatures from unknown keys                          TestAddCheckpoint/checkpoint_with_an_extension_line_and_a_foreign_signature
//	unknown origin: 404                                          TestAddCheckpoint/unknown_origin
//	no trusted signature: 403                                    TestAddCheckpoint/signed_by_another_key_with_the_same_origin
//	a trusted key's signature fails: 403                         TestAddCheckpoint/corrupted_signature
//	old > checkpoint size: 400                                   TestAddCheckpoint/old_larger_than_the_checkpoint
//	old != latest cosigned size (0 if none): 409, size, type     TestAddCheckpoint/old_differs_from_the_cosigned_size, .../old_given_for_a_log_never_cosigned
//	size 0 has the empty tree's root, else 422                   TestEmptyTreeRoot, TestAddCheckpoint/size_0_with_a_root_other_than_the_empty_tree's
//	old 0: the proof is empty, else 422                          TestAddCheckpoint/non-empty_proof_from_old_0
//	a consistency proof that does not verify: 422                TestAddCheckpoint/corrupted_consistency_proof, .../consistency_proof_too_short
//	old == size: same root, else 422                             TestAddCheckpoint/log_forks:_same_size,_another_root
//	never cosign a checkpoint that fails a check                 TestAddCheckpoint (served checkpoint unchanged on every refusal)
//	200 with note signature lines "— " ... "\n"                  TestAddCheckpoint (verifyCosignature on every 200)
//	the lines are cosignatures from the witness's key            TestAddCheckpoint (verifyCosignature)
//	the timestamp is not zero                                    verifyCosignature, TestEmptyTreeRoot
//	update the record of the latest cosigned checkpoint          TestSequence, TestAddCheckpoint/extends_the_cosigned_checkpoint
//	persist before responding, check-and-persist atomically      TestConcurrentAdd, cmd/docket-witness TestKilled
//	monitoring: GET <hex sha256(origin)>/checkpoint              TestReadEndpoints, c2sp TestLogID
//	  with the witness's cosignature and the log's signature     TestAddCheckpoint (served checkpoint checked on every 200)
//	  404 if never cosigned                                      TestReadEndpoints/checkpoint_never_cosigned

// TestEmptyTreeRoot: a size-0 checkpoint whose root is not SHA-256("") is
// refused with 422 and nothing is stored, so the log's real empty checkpoint
// is cosigned afterwards (it was once refused as a fork).
func TestEmptyTreeRoot(t *testing.T) {
	l := newTestLog(t, "example.com/empty")
	w := newTestWitness(t, Config{}, l)
	bad := signCheckpoint(t, l.Origin, 0, make([]byte, 32), l.Signer)
	if got := post(t, w, (&addRequest{Checkpoint: bad}).marshal()); got.status != http.StatusUnprocessableEntity {
		t.Fatalf("Add(size 0, zero root) = %d %q, want 422", got.status, got.body)
	}
	if got := do(t, w, "GET", "/"+c2sp.LogID(l.Origin)+"/checkpoint", nil); got.status != http.StatusNotFound {
		t.Errorf("GET checkpoint after the refusal = %d, want 404: nothing stored", got.status)
	}
	if list, err := w.ListEvidence(t.Context(), 0); err != nil || len(list) != 0 {
		t.Errorf("ListEvidence() = %v, %v; want none", list, err)
	}
	good := l.checkpoint(t, 0)
	got := post(t, w, (&addRequest{Checkpoint: good}).marshal())
	if got.status != http.StatusOK {
		t.Fatalf("Add(the empty tree) = %d %q, want 200", got.status, got.body)
	}
	verifyCosignature(t, w.vkey, good, got.body)
	// And the log grows from there.
	if got := post(t, w, l.request(t, 0, 3)); got.status != http.StatusOK {
		t.Errorf("Add(old 0, size 3) after the empty tree = %d %q, want 200", got.status, got.body)
	}
}
