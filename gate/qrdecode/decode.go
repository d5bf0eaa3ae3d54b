package qrdecode

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"os"
)

// Limits on a frame from the network. A gate camera sends at most a few
// megapixels; the limits leave room for a phone photo and refuse
// decompression bombs before their pixels are allocated.
const (
	// MaxBytes is the largest encoded frame DecodeBytes and DecodeFile read.
	MaxBytes = 32 << 20
	// MaxDimension is the largest width or height accepted.
	MaxDimension = 8192
	// MaxPixels is the largest width×height accepted: 4096×4096, room for
	// a 12-megapixel phone photo. Decoding one takes about 4 bytes a pixel
	// for the image and 1 for the luminance plane.
	MaxPixels = 4096 * 4096
)

// Sizes that choose which attempts run and on what (see steps). They bound
// what a frame without a code costs, which is every attempt.
const (
	// minSide is the shortest side that can hold a code: 21 modules, the
	// smallest QR symbol, at one pixel each.
	minSide = 21
	// shrinkAbove is the longer side above which a shrunken copy is tried
	// first, shrunk by a whole factor to at most shrinkTo on its longer side.
	shrinkAbove = 1024
	shrinkTo    = 960
	// fullUpTo is the most pixels a frame may have for the inverted and
	// blurred attempts to read it whole (1080p); larger frames get them on
	// their shrunken copy.
	fullUpTo = 1920 * 1080
	// enlargeUpTo is the most pixels a frame may have for the enlarged
	// attempt: it is for small frames whose modules are a few pixels wide,
	// and reads four times the frame.
	enlargeUpTo = 500_000
	// turnUpTo is the most pixels a turned copy may have. A frame turned
	// 45° needs a canvas of (w+h)²/2; larger frames are turned from their
	// shrunken copy.
	turnUpTo = 2_500_000
)

// source names the plane an attempt reads.
type source int

const (
	srcShrunk   source = iota // the frame shrunk by a whole factor (large frames only)
	srcFull                   // the frame as it is
	srcInverted               // its negative: light code on dark ground
	srcBlurred                // the frame under a 3×3 box blur: noise
	srcEnlarged               // the frame enlarged twice, bilinear (small frames only)
	srcTurned                 // the frame (or its shrunken copy) turned 45°
)

var sourceNames = [...]string{"shrunk", "full", "inverted", "blurred", "enlarged", "turned45"}

func (s source) String() string { return sourceNames[s] }

// step is one attempt: a plane, a binarizer, whether the finder scans
// harder, and whether it tries every triple of finder patterns (see read).
type step struct {
	src    source
	bin    binarizer
	harder bool
	every  bool
}

func (s step) String() string {
	t := s.src.String() + "/" + s.bin.String()
	if s.harder {
		t += "+harder"
	}
	if s.every {
		t += "+every"
	}
	return t
}

// steps is the order of attempts, cheapest and likeliest first; the first
// code found wins. docs/decisions.md has the figures behind it.
var steps = []step{
	{srcShrunk, hybrid, false, false},
	{srcFull, hybrid, true, false},
	{srcFull, global, false, false},
	{srcFull, hybrid, true, true},
	{srcInverted, hybrid, false, false},
	{srcBlurred, hybrid, false, false},
	{srcEnlarged, global, false, false},
	{srcTurned, hybrid, false, false},
}

// frame holds the planes one Decode derives, each made when first needed.
type frame struct {
	planes [len(sourceNames)]*plane
	done   [len(sourceNames)]bool
}

// plane returns the plane for s, or nil when s does not apply to this frame.
func (f *frame) plane(s source) *plane {
	if f.done[s] {
		return f.planes[s]
	}
	full := f.planes[srcFull]
	var p *plane
	switch s {
	case srcShrunk:
		if long := max(full.w, full.h); long > shrinkAbove {
			p = full.scaled((long + shrinkTo - 1) / shrinkTo)
		}
	case srcInverted:
		p = f.base().inverted()
	case srcBlurred:
		p = f.base().blurred()
	case srcEnlarged:
		if full.w*full.h <= enlargeUpTo {
			p = full.doubled()
		}
	case srcTurned:
		for _, b := range []*plane{full, f.plane(srcShrunk)} {
			if b != nil && (b.w+b.h)*(b.w+b.h)/2 <= turnUpTo {
				p = b.rotated(45)
				break
			}
		}
	}
	f.planes[s], f.done[s] = p, true
	return p
}

// base is the plane the costlier attempts transform: the frame up to
// fullUpTo pixels, its shrunken copy above.
func (f *frame) base() *plane {
	full := f.planes[srcFull]
	if shrunk := f.plane(srcShrunk); shrunk != nil && full.w*full.h > fullUpTo {
		return shrunk
	}
	return full
}

// Decode returns the text of the QR code in img. It returns ErrNoCode when
// no attempt finds one, and an error wrapping ErrTooLarge for an image over
// MaxDimension or MaxPixels. Text in byte mode is decoded as gozxing guesses
// its character set (UTF-8, Shift_JIS or ISO-8859-1) unless an ECI names it.
// Decode is safe for concurrent use and does not panic.
func Decode(img image.Image) (string, error) {
	text, _, err := decode(img, steps)
	return text, err
}

// decode runs the attempts in order and returns the text and the index of
// the step that read it. read recovers gozxing's panics; the recover here
// is for this package's own, which should not exist: it reports one as no
// code, saying so, rather than take the gate down.
func decode(img image.Image, order []step) (text string, i int, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, i, err = "", -1, fmt.Errorf("%w: qrdecode panicked: %v", ErrNoCode, r)
		}
	}()
	b := img.Bounds()
	if b.Dx() < minSide || b.Dy() < minSide {
		return "", -1, ErrNoCode
	}
	if err := checkSize(b.Dx(), b.Dy()); err != nil {
		return "", -1, err
	}
	var f frame
	f.planes[srcFull], f.done[srcFull] = luminance(img), true
	for i, s := range order {
		p := f.plane(s.src)
		if p == nil {
			continue
		}
		if text, err := read(p, s.bin, s.harder, s.every); err == nil {
			return text, i, nil
		}
	}
	return "", -1, ErrNoCode
}

func checkSize(w, h int) error {
	switch {
	case w <= 0 || h <= 0:
		return fmt.Errorf("%w: %dx%d has no pixels", ErrFormat, w, h)
	case w > MaxDimension || h > MaxDimension:
		return fmt.Errorf("%w: %dx%d, at most %d a side", ErrTooLarge, w, h, MaxDimension)
	case w*h > MaxPixels:
		return fmt.Errorf("%w: %dx%d is over %d pixels", ErrTooLarge, w, h, MaxPixels)
	}
	return nil
}

var (
	pngMagic  = []byte("\x89PNG\r\n\x1a\n")
	jpegMagic = []byte{0xff, 0xd8, 0xff}
)

// DecodeBytes decodes a PNG or JPEG frame and returns the text of its QR
// code. It returns an error wrapping ErrFormat for other formats and corrupt
// images, ErrTooLarge for frames over the limits (checked from the header,
// before the pixels are read), and ErrNoCode when the frame holds no
// readable code.
func DecodeBytes(data []byte) (string, error) {
	if len(data) > MaxBytes {
		return "", fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(data), MaxBytes)
	}
	var (
		decodeConfig func(io.Reader) (image.Config, error)
		decodeImage  func(io.Reader) (image.Image, error)
	)
	switch {
	case bytes.HasPrefix(data, pngMagic):
		decodeConfig, decodeImage = png.DecodeConfig, png.Decode
	case bytes.HasPrefix(data, jpegMagic):
		decodeConfig, decodeImage = jpeg.DecodeConfig, jpeg.Decode
	default:
		return "", ErrFormat
	}
	cfg, err := decodeConfig(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if err := checkSize(cfg.Width, cfg.Height); err != nil {
		return "", err
	}
	img, err := decodeImage(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrFormat, err)
	}
	return Decode(img)
}

// DecodeFile reads a PNG or JPEG file and returns the text of its QR code,
// with DecodeBytes's errors, or the error from opening or reading the file.
func DecodeFile(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	// One byte over the limit tells a file at the limit from a larger one
	// without reading all of a huge file.
	data, err := io.ReadAll(io.LimitReader(fh, MaxBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return DecodeBytes(data)
}
