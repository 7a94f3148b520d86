//go:build !linux && !darwin

package confine

import "runtime"

// Support reports that this system has no confinement mechanism.
func Support() Status {
	return Status{Detail: "no confinement mechanism on " + runtime.GOOS}
}

// Stage is a no-op here.
func Stage() {}

// Run refuses: nothing here can confine a command.
func Run(c *Confinement, cmd Command) (int, error) {
	return 0, cannot("no confinement mechanism on %s", runtime.GOOS)
}

// Mechanism returns "": nothing here can confine a command.
func Mechanism() string { return "" }
