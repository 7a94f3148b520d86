package audit

import (
	"fmt"

	"github.com/docketlog/docket/receipts"
)

// KindUnconfinedCall is a notice: an execution receipt whose confinement
// member says "unconfined" — the call ran without the kernel confinement
// its project requires (config confine; issue 23), e.g. a shell call the
// agent ran without the pre hook's rewrite.
const KindUnconfinedCall = "unconfined_call"

// unconfinedCalls returns one notice per valid execution receipt of c that
// ran unconfined in a project that confines.
func unconfinedCalls(keys *receipts.KeySet, c Chain) []Finding {
	var out []Finding
	for i, data := range c.Receipts {
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
