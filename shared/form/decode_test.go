package form

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"
)

// decodeSlow is decodeAnswer without its fast path.
func decodeSlow(raw json.RawMessage) (any, bool) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// FuzzDecodeAnswer: the fast path reads every answer exactly as the
// decoder does.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{`null`, ` true `, `false`, `"a"`, `"`, `""`, `"a\"b"`, `"\u00e9"`, "\"\xff\"", "\"a\tb\"",
		`"a"b"`, `1`, `-0`, `01`, `1.`, `1.5e+3`, `-`, `1e`, `[1]`, `{}`, `nul`, `"é"`, `9007199254740993`, `"a" "b"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, gotOK := decodeAnswer(raw)
		want, wantOK := decodeSlow(raw)
		if gotOK != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeAnswer(%q) = %#v, %v; the decoder reads %#v, %v", raw, got, gotOK, want, wantOK)
		}
	})
}
