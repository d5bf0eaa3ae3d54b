package badge

import (
	"fmt"
	"image"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// fonts are the Go fonts, parsed once. They cover WGL4: Latin with its
// accents, Greek and Cyrillic. A parsed Font is safe to share; faces made
// from it are not, so each Render makes its own.
type fonts struct {
	regular, bold *opentype.Font
}

var loadFonts = sync.OnceValues(func() (fonts, error) {
	r, err := opentype.Parse(goregular.TTF)
	if err != nil {
		return fonts{}, fmt.Errorf("parse Go Regular: %w", err)
	}
	b, err := opentype.Parse(gobold.TTF)
	if err != nil {
		return fonts{}, fmt.Errorf("parse Go Bold: %w", err)
	}
	return fonts{regular: r, bold: b}, nil
})

const ellipsis = "…"

// text is a block of lines set in one face, each line within the width it
// was fitted to.
type text struct {
	face  font.Face
	lines []string
	// truncated is true when the text did not fit and ends in an ellipsis.
	truncated bool
}

// face returns f at size pixels (dots) a em, hinted so stems land on whole
// dots.
func face(f *opentype.Font, size int) font.Face {
	fc, err := opentype.NewFace(f, &opentype.FaceOptions{Size: float64(size), DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		// NewFace fails only on options out of range, which the sizes in
		// this package are not.
		panic(fmt.Sprintf("badge: face at %d: %v", size, err))
	}
	return fc
}

// inkWidth is how wide s is drawn, ink included: glyphs that overhang their
// advance count.
func inkWidth(fc font.Face, s string) int {
	b, adv := font.BoundString(fc, s)
	lo := min(b.Min.X, 0)
	hi := max(b.Max.X, adv)
	return (hi - lo).Ceil()
}

// fit sets s in f at the largest size from maxSize down to minSize at which
// it fits width on one line, then on up to maxLines lines; failing both at
// minSize, the first maxLines lines are kept and the last ends in an
// ellipsis. Sizes step by 2 dots.
func fit(f *opentype.Font, s string, width, maxSize, minSize, maxLines int) text {
	s = strings.Join(strings.Fields(s), " ")
	// One line is tried first down to three quarters of the size: a name
	// on one line reads better than the same name broken, a little larger.
	for size := maxSize; size >= minSize && size*4 >= maxSize*3; size -= 2 {
		fc := face(f, size)
		if inkWidth(fc, s) <= width {
			return text{face: fc, lines: []string{s}}
		}
	}
	for size := maxSize; size >= minSize; size -= 2 {
		fc := face(f, size)
		if lines := wrap(fc, s, width); len(lines) <= maxLines {
			return text{face: fc, lines: lines}
		}
	}
	fc := face(f, minSize)
	lines := wrap(fc, s, width)
	if len(lines) <= maxLines {
		return text{face: fc, lines: lines}
	}
	lines = lines[:maxLines]
	last := lines[maxLines-1]
	for last != "" && inkWidth(fc, last+ellipsis) > width {
		_, n := utf8.DecodeLastRuneInString(last)
		last = last[:len(last)-n]
	}
	lines[maxLines-1] = strings.TrimRight(last, " ") + ellipsis
	return text{face: fc, lines: lines, truncated: true}
}

// wrap breaks s into lines no wider than width at spaces, and inside a word
// too wide for a line of its own.
func wrap(fc font.Face, s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		try := word
		if line != "" {
			try = line + " " + word
		}
		if inkWidth(fc, try) <= width {
			line = try
			continue
		}
		if line != "" {
			lines = append(lines, line)
			line = ""
		}
		for inkWidth(fc, word) > width {
			cut := fitPrefix(fc, word, width)
			lines = append(lines, word[:cut])
			word = word[cut:]
		}
		line = word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// fitPrefix returns the length in bytes of the longest prefix of word, one
// rune at least, that fits width.
func fitPrefix(fc font.Face, word string, width int) int {
	_, n := utf8.DecodeRuneInString(word)
	for i := n; i < len(word); {
		_, m := utf8.DecodeRuneInString(word[i:])
		if inkWidth(fc, word[:i+m]) > width {
			break
		}
		i += m
		n = i
	}
	return n
}

// lineHeight is the distance between baselines of the face's lines.
func lineHeight(fc font.Face) int {
	m := fc.Metrics()
	return (m.Ascent + m.Descent).Ceil()
}

// drawAt draws the lines centred across clip, the first line's top at y,
// and returns the y under the last line. Nothing is drawn outside clip.
func (t text) drawAt(dst *image.Gray, clip image.Rectangle, y int) int {
	d := font.Drawer{Dst: dst.SubImage(clip).(*image.Gray), Src: image.Black, Face: t.face}
	asc := t.face.Metrics().Ascent.Ceil()
	lh := lineHeight(t.face)
	for _, line := range t.lines {
		b, adv := font.BoundString(t.face, line)
		lo := min(b.Min.X, 0)
		w := (max(b.Max.X, adv) - lo).Ceil()
		x := clip.Min.X + (clip.Dx()-w)/2 - lo.Floor()
		d.Dot = fixed.P(x, y+asc)
		d.DrawString(line)
		y += lh
	}
	return y
}

// drawCentredIn draws the lines centred in box, both ways, clipped to clip.
func (t text) drawCentredIn(dst *image.Gray, clip, box image.Rectangle) {
	h := lineHeight(t.face) * len(t.lines)
	t.drawAt(dst, box.Intersect(clip), box.Min.Y+(box.Dy()-h)/2)
}
