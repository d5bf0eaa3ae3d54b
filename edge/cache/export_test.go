package cache

// For the tests of package cache_test that write files by hand.
var (
	EncodeVisit = encodeVisit
	DecodeVisit = decodeVisit
)
