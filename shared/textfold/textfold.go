// Package textfold folds names for matching as a receptionist types
// them: case, accents and runs of spaces do not count, so "Élodie  MÜLLER"
// matches "elodie muller". The reception kiosk's search and the edge's
// indexes use it, so the two fold alike.
//
// It may import the standard library and golang.org/x/text.
package textfold

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Fold returns s in lower case without accents (combining marks dropped
// after canonical decomposition), with letters and digits kept, every
// other run of characters one space, and no space at either end.
func Fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range norm.NFD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(special(unicode.ToLower(r)))
		default:
			space = true
		}
	}
	return b.String()
}

// special folds the letters canonical decomposition leaves whole.
func special(r rune) rune {
	switch r {
	case 'ø':
		return 'o'
	case 'ł':
		return 'l'
	case 'đ':
		return 'd'
	case 'ı':
		return 'i'
	}
	return r
}

// Words returns the folded words of s, in order.
func Words(s string) []string { return strings.Fields(Fold(s)) }

// Letters counts the letters and digits of s, as a search's minimum
// length is counted.
func Letters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	return n
}
