package confine_test

import (
	"os"
	"testing"

	"github.com/docketlog/docket/confine"
)

// TestMain lets the test binary be the confined stage: Run re-executes
// it, as it re-executes docket.
func TestMain(m *testing.M) {
	confine.Stage()
	os.Exit(m.Run())
}
