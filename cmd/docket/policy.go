package main

// runPolicy is built by the hook and policy work (issue 3).
func runPolicy(args []string) int {
	errorf("%v: docket policy", errNotYet)
	return 2
}
