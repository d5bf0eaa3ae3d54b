package badge

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// encodePNG writes exactly what png.Encode writes, for badges of both
// labels, with and without a logo, and for two-colour images of widths
// that end mid-byte and with a palette that has transparency.
func TestEncodePNG_AsTheStandardEncoder(t *testing.T) {
	var imgs []*image.Paletted
	logo := image.NewNRGBA(image.Rect(0, 0, 120, 80))
	for y := range 80 {
		for x := range 120 {
			if (x-60)*(x-60)+(y-40)*(y-40) < 35*35 {
				logo.Set(x, y, color.Black)
			}
		}
	}
	var logoPNG bytes.Buffer
	if err := png.Encode(&logoPNG, logo); err != nil {
		t.Fatal(err)
	}
	for _, label := range []Label{Continuous62, DieCut62x100} {
		for _, withLogo := range []bool{false, true} {
			b := Badge{VisitorName: "Zoë Łukasiewicz", Company: "Acme", Host: "Facilities", HostCaption: "Visiting",
				VisitType: "Contractor", At: time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC), Token: "P1." + strings.Repeat("x7Q", 60),
				SiteName: "Harbour Office", Label: label}
			if withLogo {
				b.Logo = logoPNG.Bytes()
			}
			img, err := Render(b)
			if err != nil {
				t.Fatal(err)
			}
			imgs = append(imgs, img)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, w := range []int{1, 7, 8, 9, 13, 700} {
		img := image.NewPaletted(image.Rect(0, 0, w, 1+w%5), palette)
		for i := range img.Pix {
			img.Pix[i] = uint8(r.IntN(2))
		}
		imgs = append(imgs, img)
	}
	transparent := image.NewPaletted(image.Rect(0, 0, 9, 3), color.Palette{color.Transparent, color.Black})
	transparent.Pix[4] = 1
	imgs = append(imgs, transparent)
	for i, img := range imgs {
		var want bytes.Buffer
		if err := png.Encode(&want, img); err != nil {
			t.Fatal(err)
		}
		got, err := encodePNG(img)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("image %d (%v): %d bytes differ from png.Encode's %d", i, img.Rect, len(got), want.Len())
		}
	}
}

// BenchmarkEncodePNG: a 62 x 100 mm badge through png.Encode and
// encodePNG.
func BenchmarkEncodePNG(b *testing.B) {
	img, err := Render(Badge{VisitorName: "Zoë Łukasiewicz", Company: "Acme", Host: "Facilities", VisitType: "Meeting",
		At: time.Date(2026, 11, 21, 9, 30, 0, 0, time.UTC), Token: "P1." + strings.Repeat("x7Q", 60), Label: DieCut62x100})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("png.Encode", func(b *testing.B) {
		for b.Loop() {
			var buf bytes.Buffer
			if err := png.Encode(&buf, img); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encodePNG", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodePNG(img); err != nil {
				b.Fatal(err)
			}
		}
	})
}
