package receipts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/docketlog/docket/internal/strictjson"
)

// A PolicyFile is one policy file as it was loaded: its name and exact bytes.
type PolicyFile struct {
	Name string
	Data []byte
}

// PolicyDigestConstruction names the policy digest construction.
const PolicyDigestConstruction = "acta-policy-digest-v1"

// PolicyDigest returns the acta-policy-digest-v1 digest of a set of Cedar
// policy files: "sha256:" + hex SHA-256 of the JCS of
// {"construction":"acta-policy-digest-v1","engine":"cedar","files":[{"name","sha256"},…]},
// files sorted by name, each hashed on its own. Names must be unique.
func PolicyDigest(files []PolicyFile) (string, error) {
	if len(files) == 0 {
		return "", fmt.Errorf("policy digest: no files")
	}
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b PolicyFile) int { return strictjson.CompareUTF16(a.Name, b.Name) })
	list := make([]any, len(sorted))
	for i, f := range sorted {
		if i > 0 && f.Name == sorted[i-1].Name {
			return "", fmt.Errorf("policy digest: duplicate file name %q", f.Name)
		}
		sum := sha256.Sum256(f.Data)
		list[i] = map[string]any{"name": f.Name, "sha256": hex.EncodeToString(sum[:])}
	}
	m := map[string]any{"construction": PolicyDigestConstruction, "engine": "cedar", "files": list}
	c, err := Canonicalize(m)
	if err != nil {
		return "", fmt.Errorf("policy digest: %w", err)
	}
	return sha256Ref(c), nil
}

// sha256Ref returns "sha256:" + lowercase hex SHA-256 of b.
func sha256Ref(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// HashJSON returns "sha256:" + hex SHA-256 of the JCS form of v, the
// construction used for tool_input_hash and tool_output_hash.
func HashJSON(v any) (string, error) {
	c, err := Canonicalize(v)
	if err != nil {
		return "", err
	}
	return sha256Ref(c), nil
}

func isHex(s string) bool {
	ok := true
	for i := 0; i < len(s); i++ {
		ok = ok && lowerHex[s[i]]
	}
	return ok
}

// lowerHex reports the bytes isHex accepts.
var lowerHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdef" {
		t[c] = true
	}
	return t
}()
