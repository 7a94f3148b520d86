package main

// runSync is built by the log work (issue 4).
func runSync(args []string) int {
	errorf("%v: docket sync", errNotYet)
	return 2
}
