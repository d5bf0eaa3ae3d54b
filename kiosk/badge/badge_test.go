package badge_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"github.com/svc-vms/svc/shared/zbartest"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/svc-vms/svc/gate/qrdecode"
	"github.com/svc-vms/svc/kiosk/badge"
	"github.com/svc-vms/svc/shared/passtoken"
)

// token signs a real pass token naming n gates, from fixed bytes so every
// run draws the same code.
func token(tb testing.TB, n int) string {
	tb.Helper()
	key, err := passtoken.NewKey(bytes.NewReader(bytes.Repeat([]byte{3, 1, 4, 1, 5, 9}, ed25519.SeedSize)))
	if err != nil {
		tb.Fatal(err)
	}
	t0 := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	c := passtoken.Claims{
		VisitID:   "visit_01jk0000000000000000000001",
		SiteID:    "site_01jk0000000000000000000002",
		NotBefore: t0,
		NotAfter:  t0.Add(10 * time.Hour),
		IssuedAt:  t0.Add(-time.Hour),
	}
	for i := range n {
		c.GateIDs = append(c.GateIDs, "gate_01jk000000000000000000000"+string(rune('3'+i)))
	}
	tok, err := passtoken.Sign(key, c)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// longToken is far longer than any pass token (twice MaxLen),
// in the characters a token uses, to show a long code still gets whole-dot
// modules that read.
func longToken() string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	var b strings.Builder
	b.WriteString(passtoken.Prefix)
	for i := range 2 * passtoken.MaxLen {
		b.WriteByte(alphabet[(i*7+i/5)%len(alphabet)])
	}
	return b.String()
}

func sample(label badge.Label, tok string) badge.Badge {
	return badge.Badge{
		VisitorName: "Zoë Łukasiewicz",
		Company:     "Acme Field Services",
		HostCaption: "Visiting",
		Host:        "Facilities team",
		VisitType:   "Contractor",
		At:          time.Date(2026, 11, 21, 23, 30, 0, 0, time.UTC),
		Location:    time.FixedZone("CET", 3600),
		Token:       tok,
		SiteName:    "Rotterdam Port Office",
		Label:       label,
	}
}

func TestRender_QRDecodesToToken(t *testing.T) {
	tokens := map[string]string{
		"no gates":  token(t, 0),
		"max gates": token(t, passtoken.MaxGates),
		"long":      longToken(),
	}
	for _, label := range badge.Labels {
		for name, tok := range tokens {
			t.Run(label.Name+"/"+name, func(t *testing.T) {
				img, err := badge.Render(sample(label, tok))
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				if got := img.Bounds(); got != image.Rect(0, 0, label.Width, label.Height) {
					t.Fatalf("bounds %v, want %dx%d", got, label.Width, label.Height)
				}
				got, err := qrdecode.Decode(img)
				if err != nil {
					t.Fatalf("qrdecode: %v", err)
				}
				if got != tok {
					t.Errorf("qrdecode read\n%q\nwant\n%q", got, tok)
				}
			})
		}
	}
}

func TestRender_Zbarimg(t *testing.T) {
	for _, label := range badge.Labels {
		for name, tok := range map[string]string{"max gates": token(t, passtoken.MaxGates), "long": longToken()} {
			t.Run(label.Name+"/"+name, func(t *testing.T) {
				data, err := badge.RenderPNG(sample(label, tok))
				if err != nil {
					t.Fatalf("RenderPNG: %v", err)
				}
				if got := zbartest.Read(t, data); got != tok {
					t.Errorf("zbarimg read\n%q\nwant\n%q", got, tok)
				}
			})
		}
	}
}

// TestRender_OneBitWholeModules shows the image is two colours and the code
// is drawn in whole dots: every module of the code is a solid square, so
// the printer prints what was drawn, unblurred.
func TestRender_OneBitPNG(t *testing.T) {
	data, err := badge.RenderPNG(sample(badge.Continuous62, token(t, 1)))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := img.(*image.Paletted)
	if !ok || len(p.Palette) != 2 {
		t.Fatalf("PNG decodes as %T with palette %v, want a two-colour palette", img, p.Palette)
	}
	for i, c := range p.Palette {
		if g := color.GrayModel.Convert(c).(color.Gray).Y; g != 0 && g != 0xff {
			t.Errorf("palette[%d] = %v, want pure black or white", i, c)
		}
	}
}

func TestRender_TextStaysInside(t *testing.T) {
	long := strings.Repeat("Wolfeschlegelsteinhausenbergerdorff ", 6)
	cases := map[string]badge.Badge{
		"long words": {
			VisitorName: "Maximiliana Alexandrovna " + long,
			Company:     long,
			HostCaption: long,
			Host:        long,
			VisitType:   long,
			Date:        long,
			SiteName:    long,
		},
		"one unbroken word": {
			VisitorName: strings.Repeat("W", 200),
			Company:     strings.Repeat("M", 200),
			Host:        strings.Repeat("Ж", 200),
			SiteName:    strings.Repeat("Ł", 200),
		},
		"unicode": {
			VisitorName: "Łukasz Żółć-Brzęczyszczykiewicz Жанна Ёлкина-Щукина Αφροδίτη",
			Company:     "Société Générale d'Électricité",
			Host:        "Øresund Ñúñez",
			SiteName:    "Zürich Süd",
		},
	}
	for _, label := range badge.Labels {
		for name, b := range cases {
			t.Run(label.Name+"/"+name, func(t *testing.T) {
				b.Label = label
				b.Token = token(t, 2)
				img, err := badge.Render(b)
				if err != nil {
					t.Fatalf("Render: %v", err)
				}
				inside := image.Rect(badge.Margin, badge.Margin, label.Width-badge.Margin, label.Height-badge.Margin)
				black := 0
				for y := 0; y < label.Height; y++ {
					for x := 0; x < label.Width; x++ {
						if img.ColorIndexAt(x, y) == 0 {
							continue
						}
						black++
						if !(image.Point{x, y}.In(inside)) {
							t.Fatalf("black dot at (%d,%d), outside %v", x, y, inside)
						}
					}
				}
				if black == 0 {
					t.Fatal("nothing drawn")
				}
				got, err := qrdecode.Decode(img)
				if err != nil || got != b.Token {
					t.Errorf("the code no longer reads under the text: %q, %v", got, err)
				}
			})
		}
	}
}

// logoPNG is a 300x200 logo: a black disc on a transparent ground.
func logoPNG(tb testing.TB) []byte {
	tb.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 300, 200))
	for y := range 200 {
		for x := range 300 {
			if (x-150)*(x-150)+(y-100)*(y-100) < 90*90 {
				img.Set(x, y, color.Black)
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func TestRender_Logo(t *testing.T) {
	plain := sample(badge.DieCut62x100, token(t, 0))
	want, err := badge.Render(plain)
	if err != nil {
		t.Fatal(err)
	}
	good := logoPNG(t)
	huge := bytes.Clone(good)
	// The IHDR width, bytes 16..19, says 100000 pixels: refused from the
	// header, before any pixel is decoded (the CRC is not checked first by
	// DecodeConfig, so the header is read as written).
	copy(huge[16:20], []byte{0, 1, 0x86, 0xa0})
	broken := map[string][]byte{
		"not a PNG":      []byte("GIF89a this is not a png"),
		"truncated":      good[:len(good)/2],
		"huge":           huge,
		"too many bytes": append(bytes.Clone(good), make([]byte, badge.MaxLogoBytes)...),
	}
	for name, logo := range broken {
		t.Run(name, func(t *testing.T) {
			b := plain
			b.Logo = logo
			got, err := badge.Render(b)
			if err != nil {
				t.Fatalf("Render with a broken logo: %v", err)
			}
			if !bytes.Equal(got.Pix, want.Pix) {
				t.Error("a broken logo changed the badge; want it left out")
			}
		})
	}
	t.Run("good", func(t *testing.T) {
		b := plain
		b.Logo = good
		got, err := badge.Render(b)
		if err != nil {
			t.Fatal(err)
		}
		box := image.Rect(badge.Margin, badge.Margin, badge.Margin+120, badge.Margin+120)
		n := 0
		for y := box.Min.Y; y < box.Max.Y; y++ {
			for x := box.Min.X; x < box.Max.X; x++ {
				if got.ColorIndexAt(x, y) == 1 && want.ColorIndexAt(x, y) == 0 {
					n++
				}
			}
		}
		// The disc is 60% of the logo's height: about 120*0.6 squared times
		// pi/4, some 4000 dots.
		if n < 2500 {
			t.Errorf("%d dots of logo drawn in its box, want a disc of about 4000", n)
		}
	})
}

func TestRender_Errors(t *testing.T) {
	tok := token(t, 0)
	for name, tc := range map[string]struct {
		b    badge.Badge
		want error
	}{
		"no token":       {badge.Badge{VisitorName: "A"}, badge.ErrNoToken},
		"unknown label":  {badge.Badge{Token: tok, Label: badge.Label{Name: "29", Width: 306, Height: 991}}, badge.ErrUnknownLabel},
		"altered label":  {badge.Badge{Token: tok, Label: func() badge.Label { l := badge.Continuous62; l.Width = 720; return l }()}, badge.ErrUnknownLabel},
		"token too long": {badge.Badge{Token: strings.Repeat("A", 2500)}, badge.ErrTokenTooLong},
		"beyond any QR":  {badge.Badge{Token: strings.Repeat("a", 5000)}, badge.ErrTokenTooLong},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := badge.Render(tc.b)
			if !errors.Is(err, tc.want) {
				t.Errorf("Render: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestLabels_Table(t *testing.T) {
	for _, l := range badge.Labels {
		if l.Offset+l.Width > badge.HeadPins {
			t.Errorf("%s: pins %d..%d beyond the head's %d", l.Name, l.Offset, l.Offset+l.Width, badge.HeadPins)
		}
		got, ok := badge.LabelByName(l.Name)
		if !ok || got != l {
			t.Errorf("LabelByName(%q) = %v, %v", l.Name, got, ok)
		}
		got, ok = badge.LabelForMedia(l.Continuous, l.WidthMM, l.LengthMM)
		if !ok || got != l {
			t.Errorf("LabelForMedia(%v, %d, %d) = %v, %v", l.Continuous, l.WidthMM, l.LengthMM, got, ok)
		}
	}
	if _, ok := badge.LabelForMedia(true, 29, 0); ok {
		t.Error("a 29 mm roll matched a label")
	}
}

func BenchmarkRender(b *testing.B) {
	bd := sample(badge.Continuous62, token(b, passtoken.MaxGates))
	bd.Logo = logoPNG(b)
	for b.Loop() {
		if _, err := badge.RenderPNG(bd); err != nil {
			b.Fatal(err)
		}
	}
}
