package qrdecode

import (
	"fmt"

	"github.com/makiuchi-d/gozxing"
	mqrcode "github.com/makiuchi-d/gozxing/multi/qrcode"
	"github.com/makiuchi-d/gozxing/qrcode"
)

// binarizer names one of gozxing's two ways of turning grey into black and
// white.
type binarizer int

const (
	// hybrid thresholds each 8×8 block against its neighbourhood: good
	// under uneven light, gozxing's default.
	hybrid binarizer = iota
	// global takes one threshold from the histogram of four rows: better
	// when a code fills the frame with large, blurred or textured modules
	// that fool the local thresholds.
	global
)

func (b binarizer) String() string {
	if b == hybrid {
		return "hybrid"
	}
	return "global"
}

// read runs gozxing's QR reader once over p. harder asks the finder to scan
// every third row instead of skipping rows on tall frames. every asks for
// gozxing's multiple-code reader instead: its finder scans every row it
// looks at to the end and tries each triple of finder patterns shaped like
// a code, where the single reader stops at the first three that agree, and
// those can be 1:1:3:1:1 runs in the code's own data (about 1 symbol in 200
// of the cloud's passes; docs/decisions.md). A panic inside gozxing (it has
// indexed past its arrays on degenerate bit matrices) is reported as an
// error like any other failure to find a code.
func read(p *plane, b binarizer, harder, every bool) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("gozxing panicked: %v", r)
		}
	}()
	src, err := gozxing.NewPlanarYUVLuminanceSource(p.pix, p.w, p.h, 0, 0, p.w, p.h, false)
	if err != nil {
		return "", err
	}
	var bin gozxing.Binarizer
	if b == hybrid {
		bin = gozxing.NewHybridBinarizer(src)
	} else {
		bin = gozxing.NewGlobalHistgramBinarizer(src)
	}
	bmp, err := gozxing.NewBinaryBitmap(bin)
	if err != nil {
		return "", err
	}
	var hints map[gozxing.DecodeHintType]any
	if harder {
		hints = map[gozxing.DecodeHintType]any{gozxing.DecodeHintType_TRY_HARDER: true}
	}
	if every {
		res, err := mqrcode.NewQRCodeMultiReader().DecodeMultiple(bmp, hints)
		if err != nil {
			return "", err
		}
		if len(res) == 0 {
			return "", ErrNoCode
		}
		return res[0].GetText(), nil
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, hints)
	if err != nil {
		return "", err
	}
	return res.GetText(), nil
}
