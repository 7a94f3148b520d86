package docketcmd

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/docketlog/docket/audit"
	"github.com/docketlog/docket/internal/strictjson"
	"github.com/docketlog/docket/receipts"
)

// reportUnmediated prints, for each valid unmediated_call receipt of a
// chain, one finding line whose evidence is the receipt itself (file and
// position): its issuer signed that the agent's own record holds a call the
// gate never decided. It returns how many it printed. Such a receipt is
// valid: verify's exit status is unchanged, docket audit counts them.
func reportUnmediated(w io.Writer, f fileResult) int {
	n := 0
	for i, r := range f.results {
		if r.Outcome != receipts.Valid || i >= len(f.lines) {
			continue
		}
		obj, _ := strictjson.ParseObject(f.lines[i])
		payload, _ := obj["payload"].(map[string]any)
		if payload["hook_event"] != receipts.UnmediatedCall {
			continue
		}
		rc, err := receipts.Open(f.lines[i], nil)
		if err != nil {
			continue
		}
		p := rc.Payload
		ran := p.ToolRan != nil && *p.ToolRan
		msg := audit.UnmediatedMessage(p.SessionID, p.Sequence, audit.Payload{ToolName: p.ToolName, ToolUseID: p.ToolUseID,
			TranscriptPosition: p.TranscriptPosition, ToolRan: ran})
		fmt.Fprintf(w, "%s: receipt %d: finding: unmediated_call: %s\n", filepath.ToSlash(f.name), i+1, msg)
		n++
	}
	return n
}
