package printer

import (
	"bytes"
	"fmt"
	"image"
	"image/color"

	"github.com/svc-vms/svc/kiosk/badge"
)

// Command bytes of the raster command reference.
const (
	esc          = 0x1b
	cmdPrint     = 0x0c // FF: print, more pages follow
	cmdPrintLast = 0x1a // Control-Z: print with feeding, last page
	cmdRaster    = 'g'
	cmdZero      = 'Z'
	cmdCompress  = 'M'
)

// Second bytes after ESC i.
const (
	escStatus      = 'S'
	escMode        = 'a' // switch dynamic command mode; 01 is raster
	escNotify      = '!' // automatic status notification
	escPrintInfo   = 'z'
	escVariousMode = 'M'
	escCutEvery    = 'A'
	escExpanded    = 'K'
	escMargin      = 'd'
)

// Values of the commands' parameters.
const (
	// invalidateLen NULs clear a printer left mid-command. The references
	// ask for 200 (QL-700 series) and 350 (QL-1100 series); more are
	// harmless, so every job starts with 400.
	invalidateLen = 400
	bytesPerLine  = badge.HeadPins / 8

	modeRaster = 0x01

	// ESC i z valid flags.
	infoMediaType   = 0x02
	infoMediaWidth  = 0x04
	infoMediaLength = 0x08
	infoQuality     = 0x40
	infoRecover     = 0x80

	// Media types of ESC i z. The QL-800 series reports 4A/4B in its
	// status reply for the same media; see mediaType.
	mediaContinuous = 0x0a
	mediaDieCut     = 0x0b

	variousAutoCut  = 0x40
	expandedCutEnd  = 0x08
	compressNone    = 0x00
	compressPackBit = 0x02

	// MaxLines is the longest page the QL-800 series takes: 1 m at 300
	// dpi. Decode refuses more.
	MaxLines = 11811
	// MinLines is the shortest continuous page: 150 lines, 12.7 mm.
	MinLines = 150
)

// Options change how a job is encoded.
type Options struct {
	// NoCompression sends raster lines as they are, 90 bytes each,
	// without M 02 and Z. The QL-800 (USB only) lacks compression; the
	// QL-810W and QL-820NWB, the network models, have it, so it is on by
	// default.
	NoCompression bool
}

// Encode writes the job that prints img on one label: invalidate,
// initialize, the control codes for the label, the raster lines and print
// with feeding. img must be label.Width dots wide; a die-cut label's image
// is at most label.Height lines long, a continuous one MinLines to
// MaxLines. Dots
// darker than mid-grey print. It returns ErrImageSize.
func Encode(img image.Image, label badge.Label, opt Options) ([]byte, error) {
	b := img.Bounds()
	if b.Dx() != label.Width || b.Dx()+label.Offset > badge.HeadPins {
		return nil, fmt.Errorf("%w: %d dots wide, the %s label prints %d", ErrImageSize, b.Dx(), label, label.Width)
	}
	if label.Continuous && (b.Dy() < MinLines || b.Dy() > MaxLines) || !label.Continuous && (b.Dy() < 1 || b.Dy() > label.Height) {
		return nil, fmt.Errorf("%w: %d lines long for the %s label", ErrImageSize, b.Dy(), label)
	}
	var w bytes.Buffer
	w.Grow(invalidateLen + 64 + b.Dy()*(bytesPerLine+3))
	w.Write(make([]byte, invalidateLen))
	w.Write([]byte{esc, '@'})
	w.Write([]byte{esc, 'i', escMode, modeRaster})
	w.Write(printInfo(label, b.Dy()))
	w.Write([]byte{esc, 'i', escVariousMode, variousAutoCut})
	w.Write([]byte{esc, 'i', escCutEvery, 1})
	w.Write([]byte{esc, 'i', escExpanded, expandedCutEnd})
	w.Write([]byte{esc, 'i', escMargin, byte(label.FeedMargin), byte(label.FeedMargin >> 8)})
	compress := !opt.NoCompression
	if compress {
		w.Write([]byte{cmdCompress, compressPackBit})
	}
	line := make([]byte, bytesPerLine)
	var packed []byte
	for y := b.Min.Y; y < b.Max.Y; y++ {
		rasterLine(line, img, y, label)
		switch {
		case !compress:
			w.Write([]byte{cmdRaster, 0x00, bytesPerLine})
			w.Write(line)
		case isZero(line):
			w.WriteByte(cmdZero)
		default:
			packed = packBits(packed[:0], line)
			w.Write([]byte{cmdRaster, 0x00, byte(len(packed))})
			w.Write(packed)
		}
	}
	w.WriteByte(cmdPrintLast)
	return w.Bytes(), nil
}

// printInfo is ESC i z for one page of lines on the label.
func printInfo(label badge.Label, lines int) []byte {
	flags := byte(infoMediaType | infoMediaWidth | infoQuality | infoRecover)
	kind := byte(mediaContinuous)
	if !label.Continuous {
		flags |= infoMediaLength
		kind = mediaDieCut
	}
	return []byte{esc, 'i', escPrintInfo, flags, kind, byte(label.WidthMM), byte(label.LengthMM),
		byte(lines), byte(lines >> 8), byte(lines >> 16), byte(lines >> 24), 0 /* starting page */, 0}
}

// rasterLine fills line with row y of img: black dots as set bits, placed
// on the label's pins and mirrored across the head.
func rasterLine(line []byte, img image.Image, y int, label badge.Label) {
	clear(line)
	b := img.Bounds()
	for x := b.Min.X; x < b.Max.X; x++ {
		if !dark(img, x, y) {
			continue
		}
		bit := pinBit(label, x-b.Min.X)
		line[bit/8] |= 0x80 >> (bit % 8)
	}
}

// pinBit is the bit of a raster line, 0 being the first byte's most
// significant bit, that prints column x of the label's image.
func pinBit(label badge.Label, x int) int {
	return badge.HeadPins - 1 - label.Offset - x
}

// dark reports whether the dot prints: darker than mid-grey once laid on
// white paper (transparent is paper).
func dark(img image.Image, x, y int) bool {
	switch m := img.(type) {
	case *image.Paletted:
		i := int(m.ColorIndexAt(x, y))
		return i < len(m.Palette) && isDark(m.Palette[i])
	case *image.Gray:
		return m.GrayAt(x, y).Y < 0x80
	}
	return isDark(img.At(x, y))
}

func isDark(c color.Color) bool {
	r, g, b, a := c.RGBA()
	// Premultiplied: on white, each channel gains the uncovered 0xffff-a.
	r, g, b = r+0xffff-a, g+0xffff-a, b+0xffff-a
	y := (19595*r + 38470*g + 7471*b + 1<<15) >> 16
	return y < 0x8000
}

func isZero(b []byte) bool {
	for _, v := range b {
		if v != 0 {
			return false
		}
	}
	return true
}
