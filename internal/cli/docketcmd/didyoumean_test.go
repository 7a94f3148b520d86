package docketcmd

import "testing"

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		cands   []string
		want    string
	}{
		{name: "one typo", s: "polcy", cands: []string{"policy", "pic", "sync"}, want: "policy"},
		{name: "transposed", s: "jsno", cands: []string{"json", "key"}, want: "json"},
		{name: "too far", s: "zzzzzzzz", cands: []string{"json", "key"}, want: ""},
		{name: "nearest wins", s: "timout", cands: []string{"timeout", "token-env"}, want: "timeout"},
		{name: "exact", s: "sync", cands: []string{"sync"}, want: "sync"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := closest(tc.s, tc.cands); got != tc.want {
				t.Errorf("closest(%q, %q) = %q, want %q", tc.s, tc.cands, got, tc.want)
			}
		})
	}
}

func TestAsksHelp(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want bool
	}{
		{name: "-h", args: []string{"-h"}, want: true},
		{name: "after a flag", args: []string{"-json", "--help"}, want: true},
		{name: "after --", args: []string{"--", "-h"}, want: false},
		{name: "none", args: []string{"-json"}, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := asksHelp(tc.args); got != tc.want {
				t.Errorf("asksHelp(%q) = %v, want %v", tc.args, got, tc.want)
			}
		})
	}
}
