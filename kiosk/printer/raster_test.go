package printer

import (
	"bytes"
	"errors"
	"image"
	"math/rand/v2"
	"testing"

	"github.com/svc-vms/svc/kiosk/badge"
)

// pattern is a 1-bit image with dots in every column's edge cases: the
// first and last printable columns and rows, and noise between.
func pattern(w, h int, seed uint64) *image.Paletted {
	img := image.NewPaletted(image.Rect(0, 0, w, h), palette)
	r := rand.New(rand.NewPCG(seed, 1))
	for y := range h {
		for x := range w {
			if x == 0 || x == w-1 || y == 0 || y == h-1 || r.IntN(3) == 0 || y%50 < 5 {
				img.Pix[y*img.Stride+x] = 1
			}
		}
		if y%97 == 0 {
			clear(img.Pix[y*img.Stride : y*img.Stride+w]) // a blank line: Z
		}
	}
	return img
}

func TestEncodeDecode_RoundTrip(t *testing.T) {
	for _, tc := range []struct {
		label badge.Label
		h     int
	}{
		{badge.Continuous62, badge.Continuous62.Height},
		{badge.Continuous62, MinLines},
		{badge.DieCut62x100, badge.DieCut62x100.Height},
	} {
		for _, opt := range []Options{{}, {NoCompression: true}} {
			img := pattern(tc.label.Width, tc.h, uint64(tc.h))
			data, err := Encode(img, tc.label, opt)
			if err != nil {
				t.Fatal(err)
			}
			pages, err := Decode(data)
			if err != nil {
				t.Fatalf("%s %d lines %+v: Decode: %v", tc.label.Name, tc.h, opt, err)
			}
			if len(pages) != 1 || pages[0].Label != tc.label || !bytes.Equal(pages[0].Image.Pix, img.Pix) {
				t.Errorf("%s %d lines %+v: decoded a different page", tc.label.Name, tc.h, opt)
			}
		}
	}
}

// TestEncode_PinsAndCommands pins the bytes a printer sees, by hand from
// the reference: the print information for 62 mm continuous, the margin,
// and the mirrored dot of the image's first column on pin 12 (the last
// bit but 12 of the line).
func TestEncode_PinsAndCommands(t *testing.T) {
	img := image.NewPaletted(image.Rect(0, 0, 696, MinLines), palette)
	img.Pix[0] = 1 // (0,0)
	data, err := Encode(img, badge.Continuous62, Options{NoCompression: true})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data[:invalidateLen], make([]byte, invalidateLen)) {
		t.Fatal("job does not start with the invalidate NULs")
	}
	rest := data[invalidateLen:]
	want := []byte{
		0x1b, '@',
		0x1b, 'i', 'a', 0x01,
		0x1b, 'i', 'z', 0xc6, 0x0a, 62, 0, MinLines, 0, 0, 0, 0, 0,
		0x1b, 'i', 'M', 0x40,
		0x1b, 'i', 'A', 0x01,
		0x1b, 'i', 'K', 0x08,
		0x1b, 'i', 'd', 35, 0,
		'g', 0x00, 90,
	}
	if !bytes.HasPrefix(rest, want) {
		t.Fatalf("job starts\n% x\nwant\n% x", rest[:len(want)], want)
	}
	line := rest[len(want) : len(want)+90]
	// Column 0 is pin 12 from the head's far end: bit 719-12 = 707, byte
	// 88, mask 0x80>>3.
	for i, b := range line {
		if wantB := map[bool]byte{true: 0x10}[i == 88]; b != wantB {
			t.Errorf("line byte %d = %#02x, want %#02x", i, b, wantB)
		}
	}
	if data[len(data)-1] != 0x1a {
		t.Errorf("job ends %#02x, want 1a (print with feeding)", data[len(data)-1])
	}
}

func TestPackBits(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	lines := [][]byte{make([]byte, 90), bytes.Repeat([]byte{0xff}, 90)}
	for range 500 {
		l := make([]byte, 90)
		for i := range l {
			if r.IntN(2) == 0 {
				l[i] = byte(r.IntN(4))
			}
		}
		lines = append(lines, l)
	}
	alt := make([]byte, 90)
	for i := range alt {
		alt[i] = byte(i) // no two alike: the worst case
	}
	lines = append(lines, alt)
	for _, l := range lines {
		packed := packBits(nil, l)
		if len(packed) > 91 {
			t.Fatalf("%d bytes packed, more than 91", len(packed))
		}
		got := make([]byte, 90)
		if err := unpackBits(got, packed); err != nil || !bytes.Equal(got, l) {
			t.Fatalf("unpack(pack(% x)) = % x, %v", l, got, err)
		}
	}
	for name, in := range map[string][]byte{
		"short":            {0x00, 1},
		"long":             {0x81, 0, 0x81, 0, 0x00, 1},
		"literal past end": {0x05, 1, 2},
		"run without byte": {0xa7},
	} {
		if err := unpackBits(make([]byte, 90), in); err == nil {
			t.Errorf("%s: unpack accepted % x", name, in)
		}
	}
}

// job builds a raw job from parts, for malformed cases.
func job(parts ...[]byte) []byte {
	return bytes.Join(parts, nil)
}

func TestDecode_Malformed(t *testing.T) {
	head := []byte{0, 0, 0x1b, '@', 0x1b, 'i', 'a', 1}
	info := func(kind, w, l byte, lines int) []byte {
		return []byte{0x1b, 'i', 'z', 0x8e, kind, w, l, byte(lines), byte(lines >> 8), 0, 0, 0, 0}
	}
	line := append([]byte{'g', 0, 90}, make([]byte, 90)...)
	zeros := func(n int) []byte { return bytes.Repeat(line, n) }
	outside := append([]byte{'g', 0, 90}, make([]byte, 90)...)
	outside[3] = 0x80 // head pin 719, beyond the 12 unused pins' edge
	good, err := Encode(pattern(696, 1109, 1), badge.DieCut62x100, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"empty":               nil,
		"only invalidate":     make([]byte, 400),
		"no initialize":       job([]byte{0x1b, 'i', 'a', 1}),
		"unknown command":     job(head, []byte{0x42}),
		"unknown ESC i":       job(head, []byte{0x1b, 'i', 'Q', 0}),
		"escp mode":           job([]byte{0x1b, '@', 0x1b, 'i', 'a', 0}),
		"raster before info":  job(head, line),
		"unknown media":       job(head, info(0x0b, 29, 90, 991), zeros(991), []byte{0x1a}),
		"media type 4b":       job(head, info(0x4b, 62, 100, 1109), zeros(1109), []byte{0x1a}),
		"too few lines":       job(head, info(0x0b, 62, 100, 1109), zeros(1108), []byte{0x1a}),
		"too many lines":      job(head, info(0x0b, 62, 100, 2), zeros(3), []byte{0x1a}),
		"longer than label":   job(head, info(0x0b, 62, 100, 1110), zeros(1110), []byte{0x1a}),
		"short line":          job(head, info(0x0b, 62, 100, 1), []byte{'g', 0, 89}, make([]byte, 89), []byte{0x1a}),
		"n1 not zero":         job(head, info(0x0b, 62, 100, 1), []byte{'g', 1, 90}, make([]byte, 90), []byte{0x1a}),
		"dot outside":         job(head, info(0x0b, 62, 100, 1), outside, []byte{0x1a}),
		"no print command":    job(head, info(0x0b, 62, 100, 1), line),
		"truncated":           good[:len(good)/2],
		"NUL inside page":     job(head, info(0x0b, 62, 100, 2), line, []byte{0}, line, []byte{0x1a}),
		"compression 01":      job(head, []byte{'M', 1}),
		"bad packbits":        job(head, []byte{'M', 2}, info(0x0b, 62, 100, 1), []byte{'g', 0, 2, 0x00, 0xff}, []byte{0x1a}),
		"cut every 0":         job(head, []byte{0x1b, 'i', 'A', 0}),
		"print without info":  job(head, []byte{0x0c}),
		"continuous too long": job(head, info(0x0a, 62, 0, MaxLines+1)),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Decode(data)
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("Decode: %v, want ErrMalformed", err)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	st := Status{Err2: Err2CoverOpen, MediaWidth: 62, MediaType: 0x4a, Type: StatusError, Phase: PhasePrinting, PhaseNumber: 0x0102}
	got, err := ParseStatus(st.Bytes())
	if err != nil || got != st {
		t.Fatalf("ParseStatus(Bytes()) = %+v, %v; want %+v", got, err, st)
	}
	if !got.Continuous() || got.Errors() != "cover open" {
		t.Errorf("Continuous %v, Errors %q", got.Continuous(), got.Errors())
	}
	for name, b := range map[string][]byte{"short": st.Bytes()[:31], "no head mark": append([]byte{0}, st.Bytes()[1:]...)} {
		if _, err := ParseStatus(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v, want ErrMalformed", name, err)
		}
	}
}

// FuzzDecode feeds the decoder what a network peer might send. It must
// return pages or an error, never panic, and what it returns must encode
// back to a job that decodes to the same dots.
func FuzzDecode(f *testing.F) {
	// Short pages keep the seeds small, so the fuzzer's mutations and
	// minimizing stay quick.
	for _, l := range badge.Labels {
		h := 12
		if l.Continuous {
			h = MinLines
		}
		for _, opt := range []Options{{}, {NoCompression: true}} {
			data, err := Encode(pattern(l.Width, h, 7), l, opt)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte{0, 0x1b, '@', 0x1b, 'i', 'S'})
	f.Fuzz(func(t *testing.T, data []byte) {
		pages, err := Decode(data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode error %v is not ErrMalformed", err)
			}
			return
		}
		for _, p := range pages {
			again, err := Encode(p.Image, p.Label, Options{})
			if err != nil {
				t.Fatalf("a decoded page does not encode: %v", err)
			}
			back, err := Decode(again)
			if err != nil || !bytes.Equal(back[0].Image.Pix, p.Image.Pix) {
				t.Fatalf("re-encoded page decodes differently: %v", err)
			}
		}
	})
}
