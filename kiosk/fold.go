package kiosk

import (
	"strings"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// Fold is a name as searches compare it: lower case, accents removed,
// spaces folded to one ("Zoë  Ångström" → "zoe angstrom"). The kiosk's
// searches and the edge's name indexes both use it, so a name typed at the
// desk finds what the index holds.
func Fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if !ascii {
		t := transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
		if out, _, err := transform.String(t, s); err == nil {
			s = out
		}
	}
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

func fold(s string) string { return Fold(s) }
