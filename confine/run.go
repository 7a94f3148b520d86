package confine

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Mechanism names, as the receipts' confinement member carries them.
const (
	MechanismLandlock = "landlock"
	MechanismSeatbelt = "seatbelt"
)

// ExitCannotConfine is the exit status of a command that was not run
// because the confinement could not be applied (fail closed). It is the
// shells' "found but could not run".
const ExitCannotConfine = 126

// ErrUnsupported says that this system cannot apply a confinement.
var ErrUnsupported = errors.New("the kernel cannot apply the confinement")

// Command is a command to run confined.
type Command struct {
	Args   []string // program and arguments; Args[0] is looked up in PATH
	Dir    string   // working directory; "" means the current one
	Env    []string // environment; nil means the current one
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Status is what Support reports.
type Status struct {
	Mechanism string // "" when unsupported
	Detail    string // the ABI, or why not
}

// String returns the one line docket doctor prints.
func (s Status) String() string {
	if s.Mechanism == "" {
		return "unconfined: " + s.Detail
	}
	return s.Mechanism + " (" + s.Detail + ")"
}

// denialMarkers are what programs print when the kernel refused a file
// operation under the confinement.
var denialMarkers = []string{"permission denied", "read-only file system", "operation not permitted"}

// Denied reports whether a tool's output shows a file operation refused by
// the kernel (EACCES, EROFS, EPERM): under a confinement, the likely cause.
func Denied(output string) bool {
	o := strings.ToLower(output)
	for _, m := range denialMarkers {
		if strings.Contains(o, m) {
			return true
		}
	}
	return false
}

func cannot(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrUnsupported}, args...)...)
}
