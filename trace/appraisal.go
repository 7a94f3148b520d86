package trace

import (
	"time"

	"github.com/docketlog/docket/audit"
)

// Appraise turns the findings of docket audit (audit.Run over the session's
// chain and the whole log) into the record's EAR appraisal: affirming with
// no finding, warning with notices only (an open session), contraindicated
// with any other finding.
func Appraise(findings []audit.Finding, at time.Time) *Appraisal {
	a := &Appraisal{Status: "affirming", Verifier: Verifier, Timestamp: at.Unix()}
	for _, f := range findings {
		switch {
		case !f.Notice:
			a.Status = "contraindicated"
		case a.Status == "affirming":
			a.Status = "warning"
		}
	}
	return a
}
