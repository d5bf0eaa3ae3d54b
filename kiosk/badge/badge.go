package badge

import (
	"fmt"
	"image"
	"image/color"
	"time"
)

// Badge is what a visitor's badge shows. Every text is printed as given:
// the kiosk translates captions and formats the date in the visitor's
// language.
type Badge struct {
	VisitorName string
	Company     string
	// Host is the person or team the visitor came to see.
	Host string
	// HostCaption is printed small above Host ("Visiting"); empty prints
	// none.
	HostCaption string
	VisitType   string
	// Date is printed as given. When it is empty and At is set, At in
	// Location (UTC when nil) is printed as 2006-01-02.
	Date     string
	At       time.Time
	Location *time.Location
	// Token is the pass token the QR code holds, exactly.
	Token    string
	SiteName string
	// Logo is the site's logo as a PNG, or nil. One that does not decode,
	// or is larger than MaxLogoBytes or MaxLogoSide, is left out.
	Logo []byte
	// Label is the label to draw for; the zero Label means Continuous62.
	Label Label
}

// Layout measures in dots (1 mm is about 11.8 dots at 300 dpi).
const (
	margin    = 24  // blank border inside the printable area, 2 mm
	headerH   = 120 // the logo's square and the site name's band
	logoGap   = 16  // between the logo and the site name
	ruleGapT  = 14  // header to rule
	ruleH     = 4   // the rule under the header
	ruleGapB  = 18  // rule to the visitor's name
	qrBox     = 420 // the QR code's square, quiet zone included, 35.6 mm
	qrGap     = 12  // text to the QR code's square
	quietZone = 4   // modules of white around the code, as ISO/IEC 18004 asks
	// MinModule is the smallest QR module Render draws, in dots (0.34 mm):
	// smaller ones blur when printed at 300 dpi and read badly at a gate.
	MinModule = 4
)

// Limits on the logo, which comes from the site's settings.
const (
	// MaxLogoBytes is the largest logo PNG drawn.
	MaxLogoBytes = 2 << 20
	// MaxLogoSide is the largest logo width or height drawn, in pixels.
	MaxLogoSide = 4096
)

// palette is 1-bit: index 0 white, so a new image is blank, 1 black. PNG
// writes a two-colour palette at one bit a pixel.
var palette = color.Palette{color.White, color.Black}

// Render draws the badge: a 1-bit image of the label's printable area
// (Label.Width x Label.Height dots), black on white. It returns
// ErrUnknownLabel, ErrNoToken or ErrTokenTooLong; a bad logo is no error.
func Render(b Badge) (*image.Paletted, error) {
	label := b.Label
	if label == (Label{}) {
		label = Continuous62
	}
	if l, ok := LabelByName(label.Name); !ok || l != label {
		return nil, fmt.Errorf("%w: %q", ErrUnknownLabel, label.Name)
	}
	if b.Token == "" {
		return nil, ErrNoToken
	}
	f, err := loadFonts()
	if err != nil {
		return nil, err
	}
	content := image.Rect(margin, margin, label.Width-margin, label.Height-margin)
	qrArea := image.Rect(content.Min.X+(content.Dx()-qrBox)/2, content.Max.Y-qrBox, content.Min.X+(content.Dx()+qrBox)/2, content.Max.Y)
	qr, err := qrSymbol(b.Token, qrArea)
	if err != nil {
		return nil, err
	}

	// Text is drawn anti-aliased on grey, then cut to 1 bit: thresholding
	// keeps strokes sharp where dithering would fray them.
	canvas := image.NewGray(image.Rect(0, 0, label.Width, label.Height))
	for i := range canvas.Pix {
		canvas.Pix[i] = 0xff
	}
	textArea := image.Rect(content.Min.X, content.Min.Y, content.Max.X, qrArea.Min.Y-qrGap)
	header := image.Rect(content.Min.X, content.Min.Y, content.Max.X, content.Min.Y+headerH)
	logo := decodeLogo(b.Logo)
	nameBox := header
	if logo != nil {
		nameBox.Min.X += headerH + logoGap
	}
	if b.SiteName != "" {
		t := fit(f.bold, b.SiteName, nameBox.Dx(), 40, 26, 2)
		t.drawCentredIn(canvas, textArea, nameBox)
	}
	y := header.Max.Y + ruleGapT
	for yy := y; yy < y+ruleH; yy++ {
		for x := content.Min.X; x < content.Max.X; x++ {
			canvas.Pix[canvas.PixOffset(x, yy)] = 0
		}
	}
	y += ruleH + ruleGapB

	date := b.Date
	if date == "" && !b.At.IsZero() {
		loc := b.Location
		if loc == nil {
			loc = time.UTC
		}
		date = b.At.In(loc).Format(time.DateOnly)
	}
	blocks := []struct {
		text               string
		bold               bool
		max, min, maxLines int
		gapAfter           int
	}{
		{b.VisitorName, true, 84, 48, 2, 4},
		{b.Company, false, 48, 34, 1, 22},
		{b.HostCaption, false, 30, 26, 1, 0},
		{b.Host, true, 48, 34, 1, 14},
		{b.VisitType, false, 38, 30, 1, 0},
		{date, false, 38, 30, 1, 0},
	}
	for _, bl := range blocks {
		if bl.text == "" {
			continue
		}
		ft := f.regular
		if bl.bold {
			ft = f.bold
		}
		t := fit(ft, bl.text, content.Dx(), bl.max, bl.min, bl.maxLines)
		y = t.drawAt(canvas, textArea, y) + bl.gapAfter
	}

	img := image.NewPaletted(canvas.Rect, palette)
	for i, v := range canvas.Pix {
		if v < 0x80 {
			img.Pix[i] = 1
		}
	}
	if logo != nil {
		drawLogo(img, logo, image.Rect(header.Min.X, header.Min.Y, header.Min.X+headerH, header.Max.Y))
	}
	qr.draw(img)
	return img, nil
}

// RenderPNG is Render encoded as a 1-bit PNG.
func RenderPNG(b Badge) ([]byte, error) {
	img, err := Render(b)
	if err != nil {
		return nil, err
	}
	data, err := encodePNG(img)
	if err != nil {
		return nil, fmt.Errorf("encode badge: %w", err)
	}
	return data, nil
}
