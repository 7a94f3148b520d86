//go:build race

package main

// With -race, TestMain builds the binaries with the race detector too, so
// the end-to-end tests check the servers for races.
func init() { buildFlags = append(buildFlags, "-race") }
