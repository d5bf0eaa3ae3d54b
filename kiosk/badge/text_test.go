package badge

import (
	"strings"
	"testing"

	"golang.org/x/image/font/sfnt"
)

// TestFonts_CoverNames shows the Go fonts have a real glyph, not the
// missing-glyph box, for each letter of names the kiosk will meet.
func TestFonts_CoverNames(t *testing.T) {
	f, err := loadFonts()
	if err != nil {
		t.Fatal(err)
	}
	var buf sfnt.Buffer
	for _, name := range []string{"Zoë Łukasiewicz-Żółć", "Жанна Ёлкина-Щукина", "Αφροδίτη Øresund Ñúñez", "François Šťastný" + ellipsis} {
		for _, r := range name {
			for _, ft := range []*sfnt.Font{f.regular, f.bold} {
				if i, err := ft.GlyphIndex(&buf, r); err != nil || i == 0 {
					t.Errorf("%q: no glyph for %q (%v)", name, r, err)
				}
			}
		}
	}
}

func TestFit(t *testing.T) {
	f, err := loadFonts()
	if err != nil {
		t.Fatal(err)
	}
	const width = 648
	for name, tc := range map[string]struct {
		s         string
		wantLines int
		wantSize  int // 0: any
		truncated bool
	}{
		"short at full size":  {"Ana Lima", 1, 84, false},
		"shrinks to one line": {"Ana Maria Vasquez", 1, 0, false},
		"wraps":               {"Maximiliana Alexandrovna Wolfeschlegelstein", 2, 0, false},
		"ellipsis":            {strings.Repeat("Wolfeschlegelsteinhausen ", 8), 2, 48, true},
		"unbroken":            {strings.Repeat("W", 100), 2, 48, true},
	} {
		t.Run(name, func(t *testing.T) {
			if name == "shrinks to one line" && inkWidth(face(f.bold, 84), tc.s) <= width {
				t.Fatalf("%q fits at full size; the case needs a longer name", tc.s)
			}
			got := fit(f.bold, tc.s, width, 84, 48, 2)
			if len(got.lines) != tc.wantLines || got.truncated != tc.truncated {
				t.Fatalf("lines %q truncated %v, want %d lines, truncated %v", got.lines, got.truncated, tc.wantLines, tc.truncated)
			}
			if tc.wantSize != 0 {
				if size := got.face.Metrics().Height.Ceil(); size < tc.wantSize {
					t.Errorf("line height %d, want at least the %d of the size asked", size, tc.wantSize)
				}
			}
			for _, l := range got.lines {
				if w := inkWidth(got.face, l); w > width {
					t.Errorf("line %q is %d dots wide, over %d", l, w, width)
				}
			}
			if tc.truncated && !strings.HasSuffix(got.lines[len(got.lines)-1], ellipsis) {
				t.Errorf("truncated text %q has no ellipsis", got.lines)
			}
		})
	}
}
