package main

// runInit is built by the hook and policy work (issue 3).
func runInit(args []string) int {
	errorf("%v: docket init", errNotYet)
	return 2
}
