package badge

import (
	"fmt"
	"image"

	qrcode "github.com/skip2/go-qrcode"
)

// symbol is a QR code placed on the label: its modules, whole dots each.
type symbol struct {
	modules [][]bool // dark modules, no quiet zone
	module  int      // dots a module
	origin  image.Point
}

// qrSymbol encodes token at error correction M, as the cloud's pass QR
// codes are, and places it in the middle of area with the largest whole
// module size that leaves its quiet zone inside area.
func qrSymbol(token string, area image.Rectangle) (symbol, error) {
	q, err := qrcode.New(token, qrcode.Medium)
	if err != nil {
		return symbol{}, fmt.Errorf("%w: %v", ErrTokenTooLong, err)
	}
	q.DisableBorder = true
	bm := q.Bitmap()
	n := len(bm)
	module := min(area.Dx(), area.Dy()) / (n + 2*quietZone)
	if module < MinModule {
		return symbol{}, fmt.Errorf("%w: %d modules a side need %d dots, the label has %d", ErrTokenTooLong, n, (n+2*quietZone)*MinModule, min(area.Dx(), area.Dy()))
	}
	side := n * module
	origin := image.Pt(area.Min.X+(area.Dx()-side)/2, area.Min.Y+(area.Dy()-side)/2)
	return symbol{modules: bm, module: module, origin: origin}, nil
}

// draw paints the dark modules black and the code's square and quiet zone
// white, so nothing else drawn there can spoil the code.
func (s symbol) draw(img *image.Paletted) {
	n := len(s.modules)
	q := quietZone * s.module
	zone := image.Rect(s.origin.X-q, s.origin.Y-q, s.origin.X+n*s.module+q, s.origin.Y+n*s.module+q).Intersect(img.Rect)
	for y := zone.Min.Y; y < zone.Max.Y; y++ {
		row := img.Pix[img.PixOffset(zone.Min.X, y):img.PixOffset(zone.Max.X, y)]
		clear(row)
	}
	for my, row := range s.modules {
		for mx, dark := range row {
			if !dark {
				continue
			}
			x0, y0 := s.origin.X+mx*s.module, s.origin.Y+my*s.module
			for y := y0; y < y0+s.module; y++ {
				off := img.PixOffset(x0, y)
				for i := range s.module {
					img.Pix[off+i] = 1
				}
			}
		}
	}
}
