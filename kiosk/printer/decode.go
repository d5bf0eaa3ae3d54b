package printer

import (
	"bufio"
	"bytes"
	"errors"
	"image"
	"io"

	"github.com/svc-vms/svc/kiosk/badge"
)

// Page is one page a job printed.
type Page struct {
	Label badge.Label
	// Image is the page as printed: Label.Width dots wide, one row a
	// raster line, colour index 1 black.
	Image *image.Paletted
}

// Decode reads a whole job, as Encode writes it or a driver sends it, and
// returns its pages. It is strict: anything the raster command reference
// does not allow where it stands, a page whose raster lines differ from what
// its print information announced, dots outside the label's printable
// area, and data that ends before a print command are ErrMalformed, with
// the byte offset. Status requests in the data are skipped.
func Decode(data []byte) ([]Page, error) {
	p := newParser(bytes.NewReader(data))
	var pages []Page
	for {
		ev, page, err := p.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if ev == evPage {
			pages = append(pages, page)
		}
	}
	if len(pages) == 0 {
		return nil, malformed(p.off, "no page printed")
	}
	return pages, nil
}

type event int

const (
	evStatusRequest event = iota + 1
	evPage
)

// parser reads a printer's input one command at a time, as a printer does.
type parser struct {
	r   *bufio.Reader
	off int64

	initialized bool // ESC @ seen
	raster      bool // ESC i a 01 seen
	compress    bool
	hasInfo     bool
	label       badge.Label
	want        int    // raster lines the print information announced
	lines       []byte // raster lines so far, 90 bytes each
}

func newParser(r io.Reader) *parser {
	return &parser{r: bufio.NewReader(r)}
}

func (p *parser) byte() (byte, error) {
	b, err := p.r.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, malformed(p.off, "data ends inside a command")
		}
		return 0, err
	}
	p.off++
	return b, nil
}

func (p *parser) read(n int) ([]byte, error) {
	buf := make([]byte, n)
	k, err := io.ReadFull(p.r, buf)
	p.off += int64(k)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, malformed(p.off, "data ends inside a command")
		}
		return nil, err
	}
	return buf, nil
}

// inPage reports whether a page has begun: its print information or raster
// lines were sent and its print command was not.
func (p *parser) inPage() bool { return p.hasInfo || len(p.lines) > 0 }

// next reads commands up to the next status request or printed page. It
// returns io.EOF when the input ends between jobs or between pages.
func (p *parser) next() (event, Page, error) {
	for {
		start := p.off
		c, err := p.r.ReadByte()
		if errors.Is(err, io.EOF) {
			if p.inPage() {
				return 0, Page{}, malformed(start, "data ends before the print command")
			}
			return 0, Page{}, io.EOF
		}
		if err != nil {
			return 0, Page{}, err
		}
		p.off++
		switch c {
		case 0x00: // invalidate
			if p.inPage() {
				return 0, Page{}, malformed(start, "invalidate (NUL) inside a page")
			}
		case esc:
			ev, err := p.escape(start)
			if err != nil || ev != 0 {
				return ev, Page{}, err
			}
		case cmdCompress:
			if err := p.needInit(start, "M"); err != nil {
				return 0, Page{}, err
			}
			m, err := p.byte()
			if err != nil {
				return 0, Page{}, err
			}
			switch m {
			case compressNone, compressPackBit:
				p.compress = m == compressPackBit
			default:
				return 0, Page{}, malformed(start, "compression mode %#02x, want 00 or 02", m)
			}
		case cmdRaster, cmdZero:
			if err := p.rasterLine(start, c); err != nil {
				return 0, Page{}, err
			}
		case cmdPrint, cmdPrintLast:
			page, err := p.print(start)
			if err != nil {
				return 0, Page{}, err
			}
			if c == cmdPrintLast {
				// The job ends: the next starts over with ESC @.
				p.initialized, p.raster, p.compress = false, false, false
			}
			return evPage, page, nil
		default:
			return 0, Page{}, malformed(start, "unknown command %#02x", c)
		}
	}
}

func (p *parser) needInit(off int64, name string) error {
	if !p.initialized {
		return malformed(off, "%s before initialize (ESC @)", name)
	}
	return nil
}

// escape reads a command that starts with ESC.
func (p *parser) escape(start int64) (event, error) {
	c, err := p.byte()
	if err != nil {
		return 0, err
	}
	if c == '@' {
		if p.inPage() {
			return 0, malformed(start, "initialize (ESC @) inside a page")
		}
		p.initialized, p.raster, p.compress = true, false, false
		return 0, nil
	}
	if c != 'i' {
		return 0, malformed(start, "unknown command ESC %#02x", c)
	}
	c, err = p.byte()
	if err != nil {
		return 0, err
	}
	if c == escStatus {
		return evStatusRequest, nil
	}
	if err := p.needInit(start, "ESC i "+string(rune(c))); err != nil {
		return 0, err
	}
	switch c {
	case escMode:
		m, err := p.byte()
		if err != nil {
			return 0, err
		}
		if m != modeRaster {
			return 0, malformed(start, "command mode %#02x, only raster (01) is spoken", m)
		}
		p.raster = true
	case escNotify:
		n, err := p.byte()
		if err != nil {
			return 0, err
		}
		if n > 1 {
			return 0, malformed(start, "status notification %#02x, want 00 or 01", n)
		}
	case escPrintInfo:
		return 0, p.printInfo(start)
	case escVariousMode:
		m, err := p.byte()
		if err != nil {
			return 0, err
		}
		if m&^variousAutoCut != 0 {
			return 0, malformed(start, "various mode %#02x has bits other than auto cut (40)", m)
		}
	case escCutEvery:
		n, err := p.byte()
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, malformed(start, "cut every 0 labels")
		}
	case escExpanded:
		if _, err := p.byte(); err != nil {
			return 0, err
		}
	case escMargin:
		b, err := p.read(2)
		if err != nil {
			return 0, err
		}
		if m := int(b[0]) | int(b[1])<<8; m > 1500 {
			return 0, malformed(start, "margin of %d dots", m)
		}
	default:
		return 0, malformed(start, "unknown command ESC i %#02x", c)
	}
	return 0, nil
}

func (p *parser) printInfo(start int64) error {
	if len(p.lines) > 0 {
		return malformed(start, "print information (ESC i z) after raster lines")
	}
	b, err := p.read(10)
	if err != nil {
		return err
	}
	flags, kind, width, length := b[0], b[1], int(b[2]), int(b[3])
	lines := int(b[4]) | int(b[5])<<8 | int(b[6])<<16 | int(b[7])<<24
	if flags&(infoMediaType|infoMediaWidth) != infoMediaType|infoMediaWidth {
		return malformed(start, "print information without media type and width (flags %#02x)", flags)
	}
	if kind != mediaContinuous && kind != mediaDieCut {
		return malformed(start, "media type %#02x, want 0a or 0b", kind)
	}
	continuous := kind == mediaContinuous
	if !continuous && flags&infoMediaLength == 0 {
		return malformed(start, "die-cut print information without media length")
	}
	if continuous {
		length = 0
	}
	label, ok := badge.LabelForMedia(continuous, width, length)
	if !ok {
		return malformed(start, "no label for media type %#02x, %d x %d mm", kind, width, length)
	}
	if continuous && (lines < MinLines || lines > MaxLines) || !continuous && (lines < 1 || lines > label.Height) {
		return malformed(start, "%d raster lines for the %s label", lines, label)
	}
	if b[8] > 1 || b[9] != 0 {
		return malformed(start, "print information page %#02x and %#02x, want 00/01 and 00", b[8], b[9])
	}
	p.hasInfo, p.label, p.want = true, label, lines
	return nil
}

func (p *parser) rasterLine(start int64, c byte) error {
	if !p.raster {
		return malformed(start, "raster line before raster mode (ESC i a 01)")
	}
	if !p.hasInfo {
		return malformed(start, "raster line before print information (ESC i z)")
	}
	if len(p.lines)/bytesPerLine >= p.want {
		return malformed(start, "more raster lines than the %d announced", p.want)
	}
	line := make([]byte, bytesPerLine)
	if c == cmdRaster {
		hdr, err := p.read(2)
		if err != nil {
			return err
		}
		if hdr[0] != 0 {
			return malformed(start, "raster line with n1 %#02x, want 00", hdr[0])
		}
		n := int(hdr[1])
		if !p.compress && n != bytesPerLine {
			return malformed(start, "uncompressed raster line of %d bytes, want %d", n, bytesPerLine)
		}
		if n == 0 {
			return malformed(start, "empty raster line")
		}
		data, err := p.read(n)
		if err != nil {
			return err
		}
		if p.compress {
			if err := unpackBits(line, data); err != nil {
				return malformed(start, "raster line: %v", err)
			}
		} else {
			copy(line, data)
		}
	}
	mask := outsideMask(p.label)
	for i, b := range line {
		if b&mask[i] != 0 {
			return malformed(start, "dots on head pins outside the %s label's printable pins", p.label)
		}
	}
	p.lines = append(p.lines, line...)
	return nil
}

func (p *parser) print(start int64) (Page, error) {
	if !p.hasInfo {
		return Page{}, malformed(start, "print command without print information")
	}
	if got := len(p.lines) / bytesPerLine; got != p.want {
		return Page{}, malformed(start, "%d raster lines, the print information announced %d", got, p.want)
	}
	img := image.NewPaletted(image.Rect(0, 0, p.label.Width, p.want), palette)
	for y := range p.want {
		line := p.lines[y*bytesPerLine : (y+1)*bytesPerLine]
		row := img.Pix[y*img.Stride : y*img.Stride+p.label.Width]
		for x := range row {
			bit := pinBit(p.label, x)
			if line[bit/8]&(0x80>>(bit%8)) != 0 {
				row[x] = 1
			}
		}
	}
	page := Page{Label: p.label, Image: img}
	p.hasInfo, p.lines, p.want = false, nil, 0
	return page, nil
}

// outsideMask has the bits of a raster line set for the head pins outside
// the label's printable area: no dot may be there.
func outsideMask(label badge.Label) (mask [bytesPerLine]byte) {
	for i := range mask {
		mask[i] = 0xff
	}
	for x := range label.Width {
		bit := pinBit(label, x)
		mask[bit/8] &^= 0x80 >> (bit % 8)
	}
	return mask
}
