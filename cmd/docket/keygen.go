package main

func runKeygen(args []string) int { errorf("%v: docket keygen", errNotYet); return 2 }
