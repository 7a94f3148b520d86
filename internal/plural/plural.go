// Package plural writes a count with its noun: "1 finding", "2 findings".
package plural

import (
	"strconv"
	"strings"
)

// Integer is any integer type a count comes in.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Count returns n and noun, the noun in the plural unless n is 1. noun is
// the singular; its last word is the one counted ("later logged receipt"
// gives "2 later logged receipts").
func Count[T Integer](n T, noun string) string {
	s := strconv.FormatInt(int64(n), 10)
	if n == 1 {
		return s + " " + noun
	}
	i := strings.LastIndexByte(noun, ' ') + 1
	return s + " " + noun[:i] + Noun(noun[i:])
}

// Noun returns the plural of an English noun by the regular rules.
func Noun(word string) string {
	switch {
	case strings.HasSuffix(word, "y") && len(word) > 1 && !strings.ContainsRune("aeiou", rune(word[len(word)-2])):
		return word[:len(word)-1] + "ies"
	case strings.HasSuffix(word, "s"), strings.HasSuffix(word, "x"), strings.HasSuffix(word, "ch"), strings.HasSuffix(word, "sh"):
		return word + "es"
	}
	return word + "s"
}
