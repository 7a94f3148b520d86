package audit

import (
	"bytes"
	"fmt"

	"github.com/docketlog/docket/receipts"
)

// KindUnconfinedCall is a notice: an execution receipt whose confinement
// member says "unconfined" — the call ran without the kernel confinement
// its project requires (config confine; issue 23), e.g. a shell call the
// agent ran without the pre hook's rewrite.
const KindUnconfinedCall = "unconfined_call"

// unconfinedCalls returns one notice per valid execution receipt of
// c.Receipts (a presented chain as verifyChain loaded it) that ran
// unconfined in a project that confines. Only a receipt whose bytes can
// hold the member value "unconfined" (it, or a \u escape) is opened, and
// so verified, a second time.
func unconfinedCalls(keys *receipts.KeySet, c Chain) []Finding {
	var out []Finding
	for i, data := range c.Receipts {
		if !bytes.Contains(data, []byte("unconfined")) && !bytes.Contains(data, []byte(`\u`)) {
			continue
		}
		r, err := receipts.Open(data, keys)
		if err != nil {
			continue // reported by checkChain
		}
		p := r.Payload
		if p.Confinement == nil || !p.Confinement.Unconfined {
			continue
		}
		out = append(out, Finding{Kind: KindUnconfinedCall, Notice: true, Issuer: p.IssuerID, Session: p.SessionID, Sequence: p.Sequence, Source: c.Source,
			Message: fmt.Sprintf("%s receipt %d: %s call %s ran unconfined in a project that confines its commands", c.Source, i+1, p.ToolName, p.ToolUseID)})
	}
	return out
}
