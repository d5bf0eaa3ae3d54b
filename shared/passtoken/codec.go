package passtoken

// The two text encodings a token meets: the TypeIDs in the claims and the
// base32 of the token itself. Both are written here rather than imported so
// that the package stays on the standard library and the decoder can be as
// strict as the format requires.

// typeIDAlphabet is the lower-case Crockford base32 of TypeID suffixes.
const typeIDAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// typeIDValue maps a byte to its value in typeIDAlphabet, 0xFF if absent.
var typeIDValue = alphabetTable(typeIDAlphabet)

// base32Alphabet is RFC 4648 base32, all in the QR alphanumeric set.
const base32Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

var base32Value = alphabetTable(base32Alphabet)

func alphabetTable(alphabet string) [256]byte {
	var t [256]byte
	for i := range t {
		t[i] = 0xFF
	}
	for i := 0; i < len(alphabet); i++ {
		t[alphabet[i]] = byte(i)
	}
	return t
}

// typeIDSuffixLen is the length of a TypeID suffix: 26 characters of 5 bits
// hold the 128-bit UUID behind 2 zero bits, so the first is 0..7.
const typeIDSuffixLen = 26

// parseTypeID returns the UUID inside s, which must be prefix_ followed by a
// canonical suffix (lower case, first character 0..7).
func parseTypeID(prefix, s string) (uuid [16]byte, ok bool) {
	n := len(prefix)
	if len(s) != n+1+typeIDSuffixLen || s[:n] != prefix || s[n] != '_' {
		return uuid, false
	}
	suffix := s[n+1:]
	acc := uint(typeIDValue[suffix[0]])
	if acc > 7 {
		return uuid, false
	}
	bits, j := 3, 0
	for i := 1; i < len(suffix); i++ {
		v := typeIDValue[suffix[i]]
		if v == 0xFF {
			return uuid, false
		}
		acc = acc<<5 | uint(v)
		bits += 5
		if bits >= 8 {
			bits -= 8
			uuid[j] = byte(acc >> bits)
			j++
			acc &= 1<<bits - 1
		}
	}
	return uuid, true
}

// appendTypeID appends prefix_ and the TypeID suffix of uuid to dst.
func appendTypeID(dst []byte, prefix string, uuid *[16]byte) []byte {
	dst = append(dst, prefix...)
	dst = append(dst, '_')
	// The first character carries the top 3 bits; 25 more carry 5 each.
	dst = append(dst, typeIDAlphabet[uuid[0]>>5])
	acc, bits := uint(uuid[0]&0x1F), 5
	for i := 1; ; {
		for bits >= 5 {
			bits -= 5
			dst = append(dst, typeIDAlphabet[acc>>bits&0x1F])
		}
		if i == len(uuid) {
			break
		}
		acc = acc<<8 | uint(uuid[i])
		bits += 8
		i++
	}
	return dst
}

// decodeBase32 decodes src, unpadded upper-case RFC 4648 base32, into dst and
// returns the number of bytes written. It refuses anything that is not the
// one form encoding produces: a character outside the alphabet (so also
// padding, whitespace and lower case), a length no byte count encodes to,
// non-zero trailing bits, or more bytes than dst holds.
func decodeBase32(dst []byte, src string) (int, bool) {
	var acc uint
	bits, n := 0, 0
	for i := 0; i < len(src); i++ {
		v := base32Value[src[i]]
		if v == 0xFF {
			return 0, false
		}
		acc = acc<<5 | uint(v)
		bits += 5
		if bits >= 8 {
			// Verify's MaxLen check already bounds src; this keeps a
			// change of either from turning into a panic.
			if n == len(dst) {
				return 0, false
			}
			bits -= 8
			dst[n] = byte(acc >> bits)
			n++
			acc &= 1<<bits - 1
		}
	}
	// A whole character left over means a length (1, 3 or 6 mod 8) that no
	// byte count encodes to; fewer bits are the last character's padding
	// and must be zero.
	if bits >= 5 || acc != 0 {
		return 0, false
	}
	return n, true
}
