package cache

import "github.com/svc-vms/svc/shared/ids"

// uid is the 128-bit UUID inside a visit's (or a person's) TypeID. The View
// keys visits and people by it rather than by the ID text: 16 bytes inline
// in the map slot instead of a string header and a separate 32-byte
// allocation per visit.
type uid struct{ hi, lo uint64 }

// crockford is the lower-case Crockford base32 alphabet of TypeID suffixes.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

var crockfordValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := 0; i < len(crockford); i++ {
		t[crockford[i]] = byte(i)
	}
	return t
}()

// visitUID parses a visit ID. The suffix is 26 base32 digits of a 130-bit
// number whose top two bits ids.Valid guarantees are zero, so the mapping
// to 128 bits is one to one and visitID gives the same text back.
func visitUID(id string) (uid, bool) { return parseUID(ids.Visit, id) }

// visitID is the TypeID text of u.
func visitID(u uid) string { return formatUID(ids.Visit, u) }

// personUID parses a person ID, as visitUID a visit's.
func personUID(id string) (uid, bool) { return parseUID(ids.Person, id) }

// personID is the person TypeID text of u.
func personID(u uid) string { return formatUID(ids.Person, u) }

func parseUID(prefix, id string) (uid, bool) {
	if !ids.Valid(prefix, id) {
		return uid{}, false
	}
	var u uid
	for i := len(prefix) + 1; i < len(id); i++ {
		u.hi = u.hi<<5 | u.lo>>59
		u.lo = u.lo<<5 | uint64(crockfordValue[id[i]])
	}
	return u, true
}

// maxPrefix is the longest prefix formatUID is given, so its buffer can be
// on the stack.
const maxPrefix = len(ids.Visitor)

func formatUID(prefix string, u uid) string {
	var buf [maxPrefix + 1 + 26]byte
	return string(appendID(buf[:0], prefix, u))
}

// appendID appends the TypeID text of u with the prefix to b.
func appendID(b []byte, prefix string, u uid) []byte {
	n := len(b) + len(prefix) + 1
	b = append(b, prefix...)
	b = append(b, '_')
	b = append(b, make([]byte, 26)...)
	for i := len(b) - 1; i >= n; i-- {
		b[i] = crockford[u.lo&31]
		u.lo = u.lo>>5 | u.hi<<59
		u.hi >>= 5
	}
	return b
}
