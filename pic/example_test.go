package pic_test

import (
	"context"
	"fmt"
	"os"

	"github.com/docketlog/docket/pic"
)

// Verify a signed payment proposal from the PIC examples, bound to the
// tool it is attached to, against the example keyring.
func ExampleVerify() {
	keys, _ := os.ReadFile("../testdata/vectors/pic/pic_keys.example.json")
	proposal, _ := os.ReadFile("../testdata/vectors/pic/examples/financial_sig_ok.json")
	kr, err := pic.ParseKeyring(keys)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := pic.Verify(context.Background(), proposal, pic.Options{Tool: "payments_send", Keys: kr})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Impact, res.Trusted, res.TrustedClaims)

	_, err = pic.Verify(context.Background(), proposal, pic.Options{Tool: "payments_refund", Keys: kr})
	fmt.Println(err)
	// Output:
	// money [approval_123] true
	// PIC_TOOL_BINDING_MISMATCH: proposal is for tool "payments_send", the call is to "payments_refund"
}
