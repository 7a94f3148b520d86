package main

// runHook is built by the hook and policy work (issue 3).
func runHook(args []string) int {
	errorf("%v: docket hook", errNotYet)
	return 2
}
