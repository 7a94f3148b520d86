package main

// runDoctor is built by the hook and policy work (issue 3).
func runDoctor(args []string) int {
	errorf("%v: docket doctor", errNotYet)
	return 2
}
