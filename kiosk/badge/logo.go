package badge

import (
	"bytes"
	"image"
	"image/draw"
	"image/png"

	xdraw "golang.org/x/image/draw"
)

// decodeLogo returns the logo, or nil when there is none or it is not a PNG
// within the limits: a site's logo is decoration, never a reason for a
// visitor to get no badge.
func decodeLogo(data []byte) image.Image {
	if len(data) == 0 || len(data) > MaxLogoBytes {
		return nil
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(data))
	if err != nil || cfg.Width < 1 || cfg.Height < 1 || cfg.Width > MaxLogoSide || cfg.Height > MaxLogoSide {
		return nil
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	return img
}

// drawLogo scales the logo to fit box, keeping its proportions, lays it on
// white (transparent parts print as paper) and dithers it to 1 bit.
func drawLogo(dst *image.Paletted, logo image.Image, box image.Rectangle) {
	sb := logo.Bounds()
	w, h := box.Dx(), sb.Dy()*box.Dx()/sb.Dx()
	if h > box.Dy() {
		w, h = sb.Dx()*box.Dy()/sb.Dy(), box.Dy()
	}
	w, h = max(w, 1), max(h, 1)
	r := image.Rect(0, 0, w, h)
	scaled := image.NewRGBA(r)
	draw.Draw(scaled, r, image.White, image.Point{}, draw.Src)
	xdraw.CatmullRom.Scale(scaled, r, logo, sb, xdraw.Over, nil)
	at := image.Pt(box.Min.X+(box.Dx()-w)/2, box.Min.Y+(box.Dy()-h)/2)
	draw.FloydSteinberg.Draw(dst, r.Add(at), scaled, image.Point{})
}
