package main

func runVerify(args []string) int { errorf("%v: docket verify", errNotYet); return 2 }
