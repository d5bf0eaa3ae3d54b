package badge

import "strconv"

// Dots per inch of every label in the table: the Brother QL print head.
const DPI = 300

// Label is a label a printer can be loaded with, in print-head dots at
// 300 dpi, with the media codes a Brother QL printer uses for it in its
// print information command and its status reply. Values come from Brother's
// "Raster Command Reference" for the QL-800/810W/820NWB (section 2.3.2, page
// size); kiosk/printer encodes and checks jobs from these fields alone.
type Label struct {
	// Name is the label's stable key, stored with print jobs: "62" or
	// "62x100".
	Name string
	// Continuous is true for a roll cut to length after each badge, false
	// for die-cut labels of fixed length.
	Continuous bool
	// WidthMM is the media width (the status reply's media width and the
	// print information's n3).
	WidthMM int
	// LengthMM is a die-cut label's length (n4 and the status reply's
	// media length); 0 for continuous rolls.
	LengthMM int
	// Width is the printable width in dots: the pins of the print head
	// the label's printable area covers.
	Width int
	// Height is the badge's length in raster lines: a die-cut label's
	// printable length, or the length this package cuts a continuous roll
	// to (see Continuous62).
	Height int
	// Offset is how many head pins lie beside the printable area on the
	// side of pin 0 (the last bit of a raster line): the area is pins
	// Offset..Offset+Width-1 of HeadPins.
	Offset int
	// FeedMargin is the margin in dots before and after the badge that
	// the specify-margin command (ESC i d) asks for: 35 dots (3 mm) on
	// continuous rolls, 0 on die-cut labels, whose margins are fixed.
	FeedMargin int
}

// HeadPins is the number of pins on the QL-800 series' 62 mm print head: one
// raster line is HeadPins bits, 90 bytes.
const HeadPins = 720

// The labels a badge can be printed on.
var (
	// Continuous62 is a 62 mm continuous roll (DK-22205), cut after each
	// badge. The reference gives its printable width, 696 of the 720 pins
	// with 12 to each side; its length is ours: 1109 lines, the printable
	// length of the die-cut 62x100, so both labels carry the same layout,
	// and with the 3 mm feed margins before and after, the cut piece is
	// 1179 dots, 99.8 mm.
	Continuous62 = Label{Name: "62", Continuous: true, WidthMM: 62, Width: 696, Height: 1109, Offset: 12, FeedMargin: 35}
	// DieCut62x100 is the 62 x 100 mm die-cut label (DK-11202): the
	// reference's printable area is 696 x 1109 dots of 732 x 1179, 12 pins
	// to each side.
	DieCut62x100 = Label{Name: "62x100", WidthMM: 62, LengthMM: 100, Width: 696, Height: 1109, Offset: 12}
)

// Labels lists every label, the default (Continuous62) first.
var Labels = []Label{Continuous62, DieCut62x100}

// LabelByName returns the label with the name, as stored with a print job.
func LabelByName(name string) (Label, bool) {
	for _, l := range Labels {
		if l.Name == name {
			return l, true
		}
	}
	return Label{}, false
}

// LabelForMedia returns the label whose media codes are these: width and
// length in millimetres (length 0 for continuous rolls), as a printer's
// print information command or status reply gives them.
func LabelForMedia(continuous bool, widthMM, lengthMM int) (Label, bool) {
	for _, l := range Labels {
		if l.Continuous == continuous && l.WidthMM == widthMM && (continuous || l.LengthMM == lengthMM) {
			return l, true
		}
	}
	return Label{}, false
}

// String names the label for logs and errors: "62 mm continuous" or
// "62 x 100 mm die-cut".
func (l Label) String() string {
	if l.Continuous {
		return strconv.Itoa(l.WidthMM) + " mm continuous"
	}
	return strconv.Itoa(l.WidthMM) + " x " + strconv.Itoa(l.LengthMM) + " mm die-cut"
}
