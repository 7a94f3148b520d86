package plural

import "testing"

func TestCount(t *testing.T) {
	tests := []struct {
		name string
		n    int
		noun string
		want string
	}{
		{"one", 1, "finding", "1 finding"},
		{"zero", 0, "finding", "0 findings"},
		{"many", 2, "finding", "2 findings"},
		{"y after consonant", 3, "entry", "3 entries"},
		{"y after vowel", 2, "key", "2 keys"},
		{"sibilant", 2, "match", "2 matches"},
		{"last word counted", 2, "later logged receipt", "2 later logged receipts"},
		{"one with words", 1, "later logged receipt", "1 later logged receipt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Count(tt.n, tt.noun); got != tt.want {
				t.Errorf("Count(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
			}
		})
	}
	if got := Count(uint64(1), "entry"); got != "1 entry" {
		t.Errorf("Count(uint64(1), entry) = %q, want 1 entry", got)
	}
}
