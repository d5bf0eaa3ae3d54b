package ids

import "strings"

// ShortCodeLen is the length of a visit's short code, without its dash.
const ShortCodeLen = 8

// ShortCode is the invitation short code of a visit: the last 8 characters
// of its ID's suffix, upper case. A visit ID is a UUIDv7, whose last 62
// bits are random, so the code is 40 random bits in Crockford base32 that
// the cloud, the edge and the kiosk each derive from the ID alone: no
// column, no wire field, no lookup table to keep in step. It returns ""
// for a string that is not a visit ID. Codes are unique per site in
// practice, not by construction (two visits among 100,000 share one with a
// probability of about 0.5%); a lookup by code takes the expected visit.
func ShortCode(visitID string) string {
	if !Valid(Visit, visitID) {
		return ""
	}
	return strings.ToUpper(visitID[len(visitID)-ShortCodeLen:])
}

// FormatShortCode shows a code as the invitation prints it: XXXX-XXXX.
func FormatShortCode(code string) string {
	if len(code) != ShortCodeLen {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// NormalizeShortCode reads a code as a person typed it: case, spaces and
// dashes ignored, and the letters Crockford base32 reads as digits (I and L
// as 1, O as 0) mapped. It returns false when what is left is not 8
// Crockford characters.
func NormalizeShortCode(s string) (string, bool) {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '-' || r == ' ':
			continue
		case r == 'i' || r == 'I' || r == 'l' || r == 'L':
			r = '1'
		case r == 'o' || r == 'O':
			r = '0'
		}
		if r > 127 || !isCrockford(byte(strings.ToLower(string(r))[0])) {
			return "", false
		}
		b.WriteString(strings.ToUpper(string(r)))
	}
	if b.Len() != ShortCodeLen {
		return "", false
	}
	return b.String(), true
}
