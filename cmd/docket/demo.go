package main

func runDemo(args []string) int { errorf("%v: docket demo", errNotYet); return 2 }
