package trace

import (
	"math/rand/v2"
	"testing"
	"unicode"
	"unicode/utf8"
)

// needsQuoteRunes is needsQuote's definition, rune by rune, without its
// ASCII fast path.
func needsQuoteRunes(s string) bool {
	if s == "" || s[0] == '"' || s[0] == '#' {
		return true
	}
	for _, r := range s {
		if r == utf8.RuneError || r <= ' ' || r == '"' || r == '=' || r == '\\' || r == 0x7f || !unicode.IsPrint(r) {
			return true
		}
	}
	return !utf8.ValidString(s)
}

// TestNeedsQuoteFastPath: the ASCII fast path answers as the rune loop does,
// for every byte alone and after a letter, and for random strings of
// ASCII, UTF-8 and invalid bytes.
func TestNeedsQuoteFastPath(t *testing.T) {
	for c := 0; c < 256; c++ {
		for _, s := range []string{string([]byte{byte(c)}), "a" + string([]byte{byte(c)}), "ab" + string(rune(c))} {
			if got, want := needsQuote(s), needsQuoteRunes(s); got != want {
				t.Errorf("needsQuote(%q) = %v, want %v", s, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", "0", "_", ".", "-", "/", " ", "=", "\"", "\\", "#", "\x7f", "\x01", "é", "→", "\u00a0", "\xff", "\u200b"}
	for i := 0; i < 20000; i++ {
		var s string
		for n := r.IntN(6); n >= 0; n-- {
			s += alphabet[r.IntN(len(alphabet))]
		}
		if got, want := needsQuote(s), needsQuoteRunes(s); got != want {
			t.Fatalf("needsQuote(%q) = %v, want %v", s, got, want)
		}
	}
}
