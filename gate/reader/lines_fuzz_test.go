package reader

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"
	"unicode/utf8"
)

// chunked reads data n bytes at a time, as a serial line or a socket
// hands it over.
type chunked struct {
	data []byte
	n    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

// wantLines is what a reader must deliver from data: the text between line
// ends (LF or CR), without empty lines, lines over max bytes or lines that
// are not UTF-8, and the text after the last line end.
func wantLines(data []byte, max int) []string {
	var out []string
	for _, l := range bytes.FieldsFunc(data, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if len(l) <= max && utf8.Valid(l) {
			out = append(out, string(l))
		}
	}
	return out
}

// FuzzReadLines: whatever bytes a reader sends, in whatever pieces, the
// lines delivered are exactly the well-formed ones, in order, and nothing
// panics or blocks.
func FuzzReadLines(f *testing.F) {
	f.Add([]byte("T1:abc\r\nT1:def\n"), uint8(1), uint16(16))
	f.Add([]byte("\r\n\r\n"), uint8(3), uint16(16))
	f.Add([]byte("no end"), uint8(200), uint16(16))
	f.Add([]byte("\xff\xfe bad utf8\nok\n"), uint8(2), uint16(16))
	f.Add(bytes.Repeat([]byte("x"), 40), uint8(7), uint16(16))
	f.Add([]byte("exactly16bytes!!\n17 bytes of text!\n"), uint8(5), uint16(16))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, max uint16) {
		m := int(max%2048) + 1
		var got []string
		o := Options{GateID: "gate_x", MaxLine: m, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return time.Time{} },
			Deliver: func(_ context.Context, _, text string, _ time.Time) { got = append(got, text) }}
		err := readLines(context.Background(), &chunked{data: slices.Clone(data), n: int(chunk) + 1}, o.withDefaults("fuzz"))
		if !errors.Is(err, io.EOF) {
			t.Fatalf("readLines returned %v, want io.EOF", err)
		}
		if want := wantLines(data, m); !slices.Equal(got, want) {
			t.Fatalf("delivered %q, want %q", got, want)
		}
	})
}
