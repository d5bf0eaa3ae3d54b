package form

import "embed"

// BuiltinTypes are the six visit type keys every organisation has (the
// spec's "Visit type").
var BuiltinTypes = []string{"meeting", "interview", "delivery", "contractor", "event", "other"}

//go:embed defaults/*.json
var defaults embed.FS

// Default returns the default form schema of a built-in visit type, or nil
// for any other key. Every default parses. The slice is the caller's.
func Default(visitType string) []byte {
	if !keyPattern.MatchString(visitType) {
		return nil
	}
	b, err := defaults.ReadFile("defaults/" + visitType + ".json")
	if err != nil {
		return nil // not built in
	}
	return b
}
