package qrdecode_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"testing"

	qrcode "github.com/skip2/go-qrcode"

	"github.com/svc-vms/svc/gate/qrdecode"
)

// qrPNG is text as a plain QR code PNG, size px square.
func qrPNG(tb testing.TB, text string, size int) []byte {
	tb.Helper()
	data, err := qrcode.Encode(text, qrcode.Medium, size)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// withPNGSize rewrites the size in a PNG's header (and the header's CRC),
// leaving the pixels as they were: a small file that claims to be large.
func withPNGSize(tb testing.TB, data []byte, w, h uint32) []byte {
	tb.Helper()
	out := bytes.Clone(data)
	// Signature (8), IHDR length (4), "IHDR" (4), width (4), height (4).
	if string(out[12:16]) != "IHDR" {
		tb.Fatal("no IHDR after the PNG signature")
	}
	binary.BigEndian.PutUint32(out[16:], w)
	binary.BigEndian.PutUint32(out[20:], h)
	binary.BigEndian.PutUint32(out[29:], crc32.ChecksumIEEE(out[12:29]))
	return out
}

func TestDecodeBytes_Rejects(t *testing.T) {
	code := qrPNG(t, "HELLO", 128)
	var gifBuf bytes.Buffer
	if err := gif.Encode(&gifBuf, image.NewPaletted(image.Rect(0, 0, 8, 8), color.Palette{color.Black, color.White}), nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, qrdecode.ErrFormat},
		{"text", []byte("P1:ABCDEFG"), qrdecode.ErrFormat},
		{"GIF", gifBuf.Bytes(), qrdecode.ErrFormat},
		{"PNG cut short", code[:len(code)/2], qrdecode.ErrFormat},
		{"PNG header only", code[:20], qrdecode.ErrFormat},
		{"JPEG magic then rubbish", append([]byte{0xff, 0xd8, 0xff, 0xe0}, bytes.Repeat([]byte{0x42}, 100)...), qrdecode.ErrFormat},
		{"wider than MaxDimension", withPNGSize(t, code, qrdecode.MaxDimension+1, 16), qrdecode.ErrTooLarge},
		{"taller than MaxDimension", withPNGSize(t, code, 16, 1<<31-1), qrdecode.ErrTooLarge},
		{"more than MaxPixels", withPNGSize(t, code, 8000, 8000), qrdecode.ErrTooLarge},
		{"more than MaxBytes", append(bytes.Clone(code), make([]byte, qrdecode.MaxBytes)...), qrdecode.ErrTooLarge},
		{"no code", encodePNG(t, image.NewGray(image.Rect(0, 0, 200, 100))), qrdecode.ErrNoCode},
		{"one pixel", encodePNG(t, image.NewGray(image.Rect(0, 0, 1, 1))), qrdecode.ErrNoCode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := qrdecode.DecodeBytes(tt.data)
			if !errors.Is(err, tt.want) {
				t.Fatalf("DecodeBytes = %q, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// TestDecode_ImageTypes reads the same frame from each image type the
// standard decoders return (and a few they do not), and from a sub-image
// whose bounds do not start at 0,0.
func TestDecode_ImageTypes(t *testing.T) {
	tok, _ := passToken(t, 1)
	sym := symbol(t, tok)
	grey := render(scene{w: 400, h: 300, background: paper(400, 300),
		toModule: placed(len(sym), 280, 200, 150, 8), dark: 30, light: 235}, sym)
	b := grey.Bounds()
	convert := func(dst draw.Image) image.Image {
		draw.Draw(dst, b, grey, b.Min, draw.Src)
		return dst
	}
	ycc, err := jpeg.Decode(bytes.NewReader(encodeJPEG(t, grey, 90)))
	if err != nil {
		t.Fatal(err)
	}
	colour, err := jpeg.Decode(bytes.NewReader(encodeJPEG(t, convert(image.NewRGBA(b)), 90)))
	if err != nil {
		t.Fatal(err)
	}
	big := image.NewRGBA(image.Rect(-50, -70, 600, 500))
	draw.Draw(big, big.Bounds(), image.NewUniform(color.RGBA{200, 40, 40, 255}), image.Point{}, draw.Src)
	draw.Draw(big, b.Add(image.Pt(-20, 33)), grey, b.Min, draw.Src)
	// Translucent black modules over nothing: luminance is taken over white.
	alpha := image.NewNRGBA(b)
	for i, v := range grey.Pix {
		alpha.Pix[4*i+3] = 255 - v
	}
	tests := []struct {
		name string
		img  image.Image
	}{
		{"Gray", grey},
		{"YCbCr (grey JPEG)", ycc},
		{"YCbCr (colour JPEG)", colour},
		{"RGBA", convert(image.NewRGBA(b))},
		{"NRGBA", convert(image.NewNRGBA(b))},
		{"NRGBA, alpha only", alpha},
		{"Paletted", convert(image.NewPaletted(b, color.Palette{color.Black, color.Gray{64}, color.Gray{128}, color.Gray{192}, color.White}))},
		{"Gray16", convert(image.NewGray16(b))},
		{"CMYK", convert(image.NewCMYK(b))},
		{"RGBA sub-image", big.SubImage(b.Add(image.Pt(-20, 33)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := qrdecode.Decode(tt.img)
			if err != nil || got != tok {
				t.Fatalf("Decode = %q, %v; want %q", got, err, tok)
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		if _, err := qrdecode.Decode(image.NewGray(image.Rect(5, 5, 5, 9))); !errors.Is(err, qrdecode.ErrNoCode) {
			t.Fatalf("Decode(empty) = %v, want ErrNoCode", err)
		}
	})
}

func TestDecodeFiles_OneLineEach(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tok, _ := passToken(t, 0)
	paths := []string{
		write("pass.png", qrPNG(t, tok, 300)),
		write("crlf.png", qrPNG(t, "line one\r\nline two\n", 300)),
		write("lookalike.png", qrPNG(t, "error: x.png: no QR code found", 300)),
		write("controls.png", qrPNG(t, "a\\b\tc\x1b[2Jd\u2028e", 300)),
		write("blank.png", encodePNG(t, image.NewGray(image.Rect(0, 0, 64, 64)))),
		write("pass.gif", []byte("GIF89a")),
		filepath.Join(dir, "missing.png"),
		write("odd\nname.jpg", encodeJPEG(t, image.NewGray(image.Rect(0, 0, 64, 64)), 80)),
	}
	var out strings.Builder
	decoded, err := qrdecode.DecodeFiles(paths, &out)
	if err != nil {
		t.Fatal(err)
	}
	if decoded != 4 {
		t.Errorf("decoded = %d, want 4", decoded)
	}
	want := []string{
		tok,
		`line one\r\nline two\n`,
		`\u0065rror: x.png: no QR code found`,
		`a\\b\tc\u001b[2Jd\u2028e`,
		"error: " + paths[4] + ": no QR code found",
		"error: " + paths[5] + ": not a PNG or JPEG image",
		"error: " + paths[6] + ": open " + paths[6] + ": no such file or directory",
		"error: " + dir + `/odd\nname.jpg: no QR code found`,
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), out.String())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %q, want %q", i+1, got[i], want[i])
		}
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestDecodeFiles_WriteError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "code.png")
	if err := os.WriteFile(path, qrPNG(t, "HELLO", 128), 0o600); err != nil {
		t.Fatal(err)
	}
	decoded, err := qrdecode.DecodeFiles([]string{path, path}, failingWriter{})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want the writer's error", err)
	}
	if decoded != 1 {
		t.Errorf("decoded = %d, want 1 (the file decoded before the write failed)", decoded)
	}
}

// FuzzDecodeBytes feeds DecodeBytes arbitrary bytes: it must not panic
// (gozxing's panics are recovered; this package's own must not happen),
// must fail only with its three errors, and must give the same answer twice.
func FuzzDecodeBytes(f *testing.F) {
	tok, _ := passToken(f, 0)
	code := qrPNG(f, "P1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 96)
	f.Add(code)
	f.Add(qrPNG(f, tok, 160))
	f.Add(qrPNG(f, "é\r\n", 64))
	f.Add(encodeJPEG(f, render(scene{w: 160, h: 120, background: flat(200),
		toModule: placed(len(symbol(f, "HELLO")), 100, 80, 60, 20), dark: 20, light: 240}, symbol(f, "HELLO")), 60))
	f.Add(encodePNG(f, image.NewGray(image.Rect(0, 0, 3, 2))))
	f.Add(withPNGSize(f, code, 1, 20000))
	f.Add([]byte("GIF89a"))
	f.Fuzz(func(t *testing.T, data []byte) {
		text, err := qrdecode.DecodeBytes(data)
		if err != nil && !errors.Is(err, qrdecode.ErrNoCode) && !errors.Is(err, qrdecode.ErrFormat) && !errors.Is(err, qrdecode.ErrTooLarge) {
			t.Fatalf("DecodeBytes: unexpected error %v", err)
		}
		if err != nil && strings.Contains(err.Error(), "qrdecode panicked") {
			t.Fatalf("DecodeBytes: %v", err)
		}
		again, err2 := qrdecode.DecodeBytes(data)
		if again != text || (err == nil) != (err2 == nil) {
			t.Fatalf("DecodeBytes gave %q, %v then %q, %v", text, err, again, err2)
		}
	})
}
