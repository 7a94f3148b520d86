package docketcmd

import (
	"regexp"
	"strings"
	"testing"

	"github.com/docketlog/docket/policy"
)

// TestDefaultPolicyNamesRealFlags: every docket mcp or docket init flag the
// default policy's comments name exists in that command's usage.
func TestDefaultPolicyNamesRealFlags(t *testing.T) {
	flags := regexp.MustCompile(`(?:^|[\s(])(-(?:high-impact|mcp|confine|observe)[a-z-]*)`).FindAllStringSubmatch(string(policy.Default), -1)
	if len(flags) == 0 {
		t.Fatal("the default policy names no docket mcp or init flag; the test looks for none")
	}
	for _, m := range flags {
		name := m[1]
		t.Run(name, func(t *testing.T) {
			re := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(name) + `\b`)
			if !re.MatchString(mcpUsage) && !re.MatchString(initUsage) {
				t.Errorf("the default policy names %s; docket mcp and docket init define no such flag:\n%s", name, strings.TrimSpace(m[0]))
			}
		})
	}
}
