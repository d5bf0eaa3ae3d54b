package qrdecode_test

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	qrcode "github.com/skip2/go-qrcode"
	"go.jetify.com/typeid"

	"github.com/svc-vms/svc/gate/qrdecode"
	"github.com/svc-vms/svc/shared/passtoken"
)

// passToken signs a real pass token with n gates, from fixed bytes so every
// run draws the same QR code, and returns it with the keys that verify it.
func passToken(tb testing.TB, n int) (string, passtoken.KeySet) {
	tb.Helper()
	key, err := passtoken.NewKey(bytes.NewReader(bytes.Repeat([]byte{7, 1, 9, 3}, 9)))
	if err != nil {
		tb.Fatal(err)
	}
	keys, err := passtoken.NewKeySet(key.Public())
	if err != nil {
		tb.Fatal(err)
	}
	id := func(prefix string, b byte) string {
		uuid := bytes.Repeat([]byte{b}, 16)
		uuid[6], uuid[8] = 0x70|b&0x0f, 0x80|b&0x3f // version 7, RFC 9562 variant
		tid, err := typeid.FromUUIDBytesWithPrefix(prefix, uuid)
		if err != nil {
			tb.Fatal(err)
		}
		return tid.String()
	}
	t0 := time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)
	c := passtoken.Claims{
		VisitID:   id("visit", 0x11),
		SiteID:    id("site", 0x22),
		NotBefore: t0,
		NotAfter:  t0.Add(10 * time.Hour),
		IssuedAt:  t0.Add(-time.Hour),
	}
	for i := range n {
		c.GateIDs = append(c.GateIDs, id("gate", byte(0x30+i)))
	}
	tok, err := passtoken.Sign(key, c)
	if err != nil {
		tb.Fatal(err)
	}
	return tok, keys
}

// symbol is a QR code as the cloud draws it (skip2/go-qrcode, error
// correction M), one bool a module, its 4-module quiet zone included.
func symbol(tb testing.TB, text string) [][]bool {
	tb.Helper()
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		tb.Fatal(err)
	}
	return q.Bitmap()
}

// scene describes a camera frame holding a code: the frame's size and
// background, where the code's quiet zone lands (the inverse map takes a
// frame pixel to a point of the symbol in module units), and the greys of
// its dark and light modules.
type scene struct {
	w, h        int
	background  func(x, y int) float64
	toModule    func(x, y float64) (mx, my float64)
	dark, light float64
}

// render draws s with sym, sampling each frame pixel's footprint at 3×3
// points, which blurs module edges like a lens.
func render(s scene, sym [][]bool) *image.Gray {
	n := float64(len(sym))
	img := image.NewGray(image.Rect(0, 0, s.w, s.h))
	for y := range s.h {
		for x := range s.w {
			var sum float64
			for _, oy := range []float64{1.0 / 6, 0.5, 5.0 / 6} {
				for _, ox := range []float64{1.0 / 6, 0.5, 5.0 / 6} {
					mx, my := s.toModule(float64(x)+ox, float64(y)+oy)
					switch {
					case mx < 0 || my < 0 || mx >= n || my >= n:
						sum += s.background(x, y)
					case sym[int(my)][int(mx)]:
						sum += s.dark
					default:
						sum += s.light
					}
				}
			}
			img.Pix[y*img.Stride+x] = clampByte(sum / 9)
		}
	}
	return img
}

func clampByte(v float64) byte { return byte(math.Round(math.Max(0, math.Min(255, v)))) }

// placed maps the symbol, size px wide, centred at (cx, cy) and turned by
// deg degrees.
func placed(n int, size, cx, cy, deg float64) func(x, y float64) (float64, float64) {
	s, c := math.Sincos(-deg * math.Pi / 180)
	scale := float64(n) / size
	return func(x, y float64) (float64, float64) {
		dx, dy := x-cx, y-cy
		return (c*dx-s*dy)*scale + float64(n)/2, (s*dx+c*dy)*scale + float64(n)/2
	}
}

// skewed maps the symbol onto the quadrilateral q (top-left, top-right,
// bottom-right, bottom-left), as a code held at an angle to the camera: the
// inverse of the homography from the unit square to q.
func skewed(n int, q [4][2]float64) func(x, y float64) (float64, float64) {
	// Heckbert's square-to-quad coefficients.
	x0, y0, x1, y1, x2, y2, x3, y3 := q[0][0], q[0][1], q[1][0], q[1][1], q[2][0], q[2][1], q[3][0], q[3][1]
	dx1, dx2, dx3 := x1-x2, x3-x2, x0-x1+x2-x3
	dy1, dy2, dy3 := y1-y2, y3-y2, y0-y1+y2-y3
	den := dx1*dy2 - dx2*dy1
	g := (dx3*dy2 - dx2*dy3) / den
	h := (dx1*dy3 - dx3*dy1) / den
	a, b, c := x1-x0+g*x1, x3-x0+h*x3, x0
	d, e, f := y1-y0+g*y1, y3-y0+h*y3, y0
	// Invert [[a b c] [d e f] [g h 1]] by its adjugate.
	A, B, C := e-f*h, c*h-b, b*f-c*e
	D, E, F := f*g-d, a-c*g, c*d-a*f
	G, H, I := d*h-e*g, b*g-a*h, a*e-b*d
	return func(x, y float64) (float64, float64) {
		w := G*x + H*y + I
		return (A*x + B*y + C) / w * float64(n), (D*x + E*y + F) / w * float64(n)
	}
}

// paper is a light background with a soft gradient and a darker band, so
// the code is not the only thing in the frame.
func paper(w, h int) func(x, y int) float64 {
	return func(x, y int) float64 {
		v := 200 + 40*float64(x)/float64(w) - 30*float64(y)/float64(h)
		if (x/40+y/90)%7 == 0 {
			v -= 90
		}
		return v
	}
}

func flat(v float64) func(int, int) float64 { return func(int, int) float64 { return v } }

// withNoise adds Gaussian noise of standard deviation sigma, from a fixed
// seed.
func withNoise(img *image.Gray, sigma float64) *image.Gray {
	r := rand.New(rand.NewPCG(4, 2))
	for i, v := range img.Pix {
		img.Pix[i] = clampByte(float64(v) + r.NormFloat64()*sigma)
	}
	return img
}

// rotated90 turns img a quarter turn clockwise, pixel for pixel.
func rotated90(img *image.Gray) *image.Gray {
	b := img.Bounds()
	out := image.NewGray(image.Rect(0, 0, b.Dy(), b.Dx()))
	for y := range b.Dy() {
		for x := range b.Dx() {
			out.SetGray(b.Dy()-1-y, x, img.GrayAt(x, y))
		}
	}
	return out
}

func encodePNG(tb testing.TB, img image.Image) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func encodeJPEG(tb testing.TB, img image.Image, quality int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: quality}); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// passFrames returns the frames a gate camera might send of sym: name →
// encoded PNG or JPEG.
func passFrames(tb testing.TB, sym [][]bool) []struct {
	name  string
	frame []byte
} {
	tb.Helper()
	n := len(sym)
	// The symbol without its quiet zone is size−8 modules across; sizes
	// below are of the whole symbol, quiet zone included.
	upright := func(size, deg float64) scene {
		return scene{w: 640, h: 480, background: paper(640, 480), toModule: placed(n, size, 320, 240, deg), dark: 30, light: 235}
	}
	type frame = struct {
		name  string
		frame []byte
	}
	var out []frame
	add := func(name string, img image.Image, jpegQuality int) {
		if jpegQuality > 0 {
			out = append(out, frame{name, encodeJPEG(tb, img, jpegQuality)})
		} else {
			out = append(out, frame{name, encodePNG(tb, img)})
		}
	}
	add("upright", render(upright(360, 0), sym), 0)
	add("rotated 15°", render(upright(360, 15), sym), 0)
	add("rotated 90°", rotated90(render(upright(360, 0), sym)), 0)
	add("rotated 180°", rotated90(rotated90(render(upright(360, 0), sym))), 0)
	add("rotated 137°", render(upright(330, 137), sym), 0)
	add("perspective skew", render(scene{w: 640, h: 480, background: paper(640, 480),
		toModule: skewed(n, [4][2]float64{{210, 60}, {470, 90}, {500, 430}, {150, 400}}), dark: 30, light: 235}, sym), 0)
	add("low contrast, grey on grey", render(scene{w: 640, h: 480, background: flat(128),
		toModule: placed(n, 360, 320, 240, 4), dark: 112, light: 148}, sym), 0)
	// A phone in dark mode: light modules on a dark screen.
	add("inverted, light on dark", render(scene{w: 640, h: 480, background: flat(20),
		toModule: placed(n, 340, 300, 250, -6), dark: 225, light: 25}, sym), 0)
	add("Gaussian noise σ 40", withNoise(render(upright(360, 3), sym), 40), 0)
	sd := upright(360, 0)
	sd.dark, sd.light = 90, 170
	add("noise σ 25 on low contrast", withNoise(render(sd, sym), 25), 0)
	// 120 px across the symbol itself, the quiet zone extra.
	small := 120 * float64(n) / float64(n-8)
	add("120 px code in a 1920x1080 frame", render(scene{w: 1920, h: 1080, background: paper(1920, 1080),
		toModule: placed(n, small, 1300, 400, 0), dark: 30, light: 235}, sym), 0)
	add("JPEG quality 40", render(upright(300, 5), sym), 40)
	add("JPEG quality 40, 1280x720, skewed", render(scene{w: 1280, h: 720, background: paper(1280, 720),
		toModule: skewed(n, [4][2]float64{{500, 150}, {820, 190}, {840, 560}, {470, 520}}), dark: 40, light: 220}, sym), 40)
	return out
}

// TestDecode_Passes reads real pass tokens, the shortest and the longest,
// from frames turned, skewed, faint, inverted, noisy, small and
// JPEG-compressed, and checks each gives the exact token, which then
// verifies.
func TestDecode_Passes(t *testing.T) {
	for _, gates := range []int{0, passtoken.MaxGates} {
		tok, keys := passToken(t, gates)
		sym := symbol(t, tok)
		for _, f := range passFrames(t, sym) {
			t.Run(fmt.Sprintf("%d gates (%d characters, %d modules)/%s", gates, len(tok), len(sym)-8, f.name), func(t *testing.T) {
				got, err := qrdecode.DecodeBytes(f.frame)
				if err != nil {
					t.Fatalf("DecodeBytes: %v", err)
				}
				if got != tok {
					t.Fatalf("decoded\n%q\nwant\n%q", got, tok)
				}
				if _, err := passtoken.Verify(got, keys); err != nil {
					t.Errorf("the decoded token does not verify: %v", err)
				}
			})
		}
	}
}

// TestDecode_Concurrent decodes frames from several goroutines at once, as
// gates sharing an appliance do; run with -race it checks that Decode shares
// no state between calls.
func TestDecode_Concurrent(t *testing.T) {
	tok, _ := passToken(t, 2)
	sym := symbol(t, tok)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		img := render(scene{w: 400, h: 400, background: paper(400, 400),
			toModule: placed(len(sym), 220, 200, 200, float64(20*i)), dark: 30, light: 235}, sym)
		wg.Go(func() {
			if got, err := qrdecode.Decode(img); err != nil || got != tok {
				errs <- fmt.Errorf("frame %d: Decode = %q, %v", i, got, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// BenchmarkDecode_PassFrame decodes one camera-like frame of a pass: a
// 1280x720 JPEG (quality 80) with the longest token turned 10°, about 400
// px across.
func BenchmarkDecode_PassFrame(b *testing.B) {
	tok, _ := passToken(b, passtoken.MaxGates)
	sym := symbol(b, tok)
	frame := encodeJPEG(b, render(scene{w: 1280, h: 720, background: paper(1280, 720),
		toModule: placed(len(sym), 460, 600, 380, 10), dark: 35, light: 225}, sym), 80)
	for b.Loop() {
		got, err := qrdecode.DecodeBytes(frame)
		if err != nil || got != tok {
			b.Fatalf("DecodeBytes = %q, %v", got, err)
		}
	}
}

// BenchmarkDecode_NoCode decodes frames without a code, which run every
// attempt: the most a frame costs.
func BenchmarkDecode_NoCode(b *testing.B) {
	for _, size := range []image.Point{{640, 480}, {1280, 720}, {1920, 1080}} {
		img := withNoise(render(scene{w: size.X, h: size.Y, background: paper(size.X, size.Y),
			toModule: func(float64, float64) (float64, float64) { return -1, -1 }}, nil), 8)
		b.Run(fmt.Sprintf("%dx%d", size.X, size.Y), func(b *testing.B) {
			for b.Loop() {
				if _, err := qrdecode.Decode(img); err != qrdecode.ErrNoCode {
					b.Fatalf("Decode: %v, want ErrNoCode", err)
				}
			}
		})
	}
}

// TestDecode_FalseFinderPatterns reads passes whose codes hold runs in
// their data that gozxing's single-code finder takes for finder patterns
// (testdata/false-finder-passes.txt says how they were found): each as the
// cloud's pass.png draws it, and as a camera sees it held up at a slant.
// Without the attempt that tries every triple of finder patterns, none of
// the plain ones is read.
func TestDecode_FalseFinderPatterns(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "false-finder-passes.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var toks []string
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			toks = append(toks, line)
		}
	}
	if len(toks) == 0 {
		t.Fatal("no tokens in testdata/false-finder-passes.txt")
	}
	for i, tok := range toks {
		sym := symbol(t, tok)
		frames := []struct {
			name  string
			frame []byte
		}{
			{"pass.png", qrPNG(t, tok, 512)},
			{"held at 8°", encodePNG(t, render(scene{w: 640, h: 480, background: paper(640, 480),
				toModule: placed(len(sym), 380, 320, 240, 8), dark: 30, light: 235}, sym))},
		}
		for _, f := range frames {
			t.Run(fmt.Sprintf("%d/%s", i+1, f.name), func(t *testing.T) {
				got, err := qrdecode.DecodeBytes(f.frame)
				if err != nil || got != tok {
					t.Fatalf("DecodeBytes = %q, %v; want\n%q", got, err, tok)
				}
			})
		}
	}
}
