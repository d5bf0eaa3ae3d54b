package qrdecode

import (
	"image"
	"image/color"
	"math"
)

// plane is an 8-bit luminance image, row-major without padding: what the
// binarizers read. Every transform makes a new plane; none changes its input.
type plane struct {
	w, h int
	pix  []byte
}

func newPlane(w, h int) *plane { return &plane{w: w, h: h, pix: make([]byte, w*h)} }

// luminance converts img to a plane. What the standard decoders return is
// read from its buffers: JPEG's Y channel as it is, PNG's grey, paletted and
// RGBA pixels with gozxing's own weights, (R+2G+B)/4, over white where
// translucent. Any other image type goes through At, slower but the same.
func luminance(img image.Image) *plane {
	b := img.Bounds()
	p := newPlane(b.Dx(), b.Dy())
	switch m := img.(type) {
	case *image.YCbCr:
		for y := 0; y < p.h; y++ {
			i := m.YOffset(b.Min.X, b.Min.Y+y)
			copy(p.pix[y*p.w:(y+1)*p.w], m.Y[i:i+p.w])
		}
	case *image.Gray:
		for y := 0; y < p.h; y++ {
			i := m.PixOffset(b.Min.X, b.Min.Y+y)
			copy(p.pix[y*p.w:(y+1)*p.w], m.Pix[i:i+p.w])
		}
	case *image.Paletted:
		var lut [256]byte
		for i, c := range m.Palette[:min(len(m.Palette), 256)] {
			lut[i] = grey(c)
		}
		for y := 0; y < p.h; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			out := p.pix[y*p.w : (y+1)*p.w]
			for x := range out {
				out[x] = lut[row[x]]
			}
		}
	case *image.NRGBA:
		for y := 0; y < p.h; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			out := p.pix[y*p.w : (y+1)*p.w]
			for x := range out {
				s := row[4*x : 4*x+4 : 4*x+4]
				l := (uint32(s[0]) + 2*uint32(s[1]) + uint32(s[2])) / 4
				a := uint32(s[3])
				out[x] = byte((l*a + 255*(255-a)) / 255)
			}
		}
	case *image.RGBA:
		for y := 0; y < p.h; y++ {
			row := m.Pix[m.PixOffset(b.Min.X, b.Min.Y+y):]
			out := p.pix[y*p.w : (y+1)*p.w]
			for x := range out {
				s := row[4*x : 4*x+4 : 4*x+4]
				// Premultiplied: the colour over white is c + (255-a).
				l := (uint32(s[0]) + 2*uint32(s[1]) + uint32(s[2])) / 4
				out[x] = byte(min(l+255-uint32(s[3]), 255))
			}
		}
	default:
		i := 0
		for y := b.Min.Y; y < b.Max.Y; y++ {
			for x := b.Min.X; x < b.Max.X; x++ {
				p.pix[i] = grey(img.At(x, y))
				i++
			}
		}
	}
	return p
}

// grey is the luminance of c over white.
func grey(c color.Color) byte {
	r, g, b, a := c.RGBA()
	l := (r + 2*g + b) / 4 // premultiplied, 16 bits
	return byte(min(l+0xffff-a, 0xffff) >> 8)
}

// scaled returns p shrunk by the integer factor f, each output pixel the mean
// of an f×f box: averaging, unlike picking pixels, keeps thin modules grey
// rather than dropping them.
func (p *plane) scaled(f int) *plane {
	q := newPlane(p.w/f, p.h/f)
	sums := make([]uint32, q.w)
	n := uint32(f * f)
	for y := 0; y < q.h; y++ {
		clear(sums)
		for yy := y * f; yy < y*f+f; yy++ {
			row := p.pix[yy*p.w : yy*p.w+q.w*f]
			for x := range sums {
				for _, v := range row[x*f : x*f+f] {
					sums[x] += uint32(v)
				}
			}
		}
		out := q.pix[y*q.w : (y+1)*q.w]
		for x, s := range sums {
			out[x] = byte(s / n)
		}
	}
	return q
}

// doubled returns p enlarged twice in each direction, bilinear: each new
// pixel is 3/4 of its nearest source pixel and 1/4 of the next one along
// each axis (the edges repeat). Integer weights in sixteenths.
func (p *plane) doubled() *plane {
	w, h := 2*p.w, 2*p.h
	// wide holds the source rows widened twice, times 4.
	wide := make([]uint16, p.h*w)
	for y := 0; y < p.h; y++ {
		src, out := p.pix[y*p.w:(y+1)*p.w], wide[y*w:(y+1)*w]
		for x, v := range src {
			left, right := src[max(x-1, 0)], src[min(x+1, p.w-1)]
			out[2*x] = 3*uint16(v) + uint16(left)
			out[2*x+1] = 3*uint16(v) + uint16(right)
		}
	}
	q := newPlane(w, h)
	for y := 0; y < p.h; y++ {
		row := wide[y*w : (y+1)*w]
		up, down := wide[max(y-1, 0)*w:][:w], wide[min(y+1, p.h-1)*w:][:w]
		out0, out1 := q.pix[2*y*w:(2*y+1)*w], q.pix[(2*y+1)*w:(2*y+2)*w]
		for x, v := range row {
			out0[x] = byte((3*uint32(v) + uint32(up[x]) + 8) / 16)
			out1[x] = byte((3*uint32(v) + uint32(down[x]) + 8) / 16)
		}
	}
	return q
}

// rotated returns p turned by deg degrees about its centre, bilinear, on a
// canvas big enough to hold all of it, the corners white. It steps through
// the source in 16.16 fixed point.
func (p *plane) rotated(deg float64) *plane {
	s, c := math.Sincos(deg * math.Pi / 180)
	w := int(math.Ceil(math.Abs(float64(p.w)*c) + math.Abs(float64(p.h)*s)))
	h := int(math.Ceil(math.Abs(float64(p.w)*s) + math.Abs(float64(p.h)*c)))
	q := newPlane(w, h)
	const one = 1 << 16
	dxx, dxy := int64(math.Round(c*one)), int64(math.Round(-s*one))
	for y := 0; y < h; y++ {
		// The source point of the centre of output pixel (0, y).
		dx, dy := 0.5-float64(w)/2, float64(y)+0.5-float64(h)/2
		sx := int64(math.Round((c*dx + s*dy + float64(p.w)/2 - 0.5) * one))
		sy := int64(math.Round((-s*dx + c*dy + float64(p.h)/2 - 0.5) * one))
		out := q.pix[y*w : (y+1)*w]
		for x := range out {
			out[x] = p.sample(sx, sy)
			sx += dxx
			sy += dxy
		}
	}
	return q
}

// sample is p at the 16.16 fixed-point point (sx, sy), bilinear, white
// outside.
func (p *plane) sample(sx, sy int64) byte {
	x0, y0 := int(sx>>16), int(sy>>16)
	ax, ay := uint32(sx>>8)&0xff, uint32(sy>>8)&0xff // fractions in 256ths
	at := func(x, y int) uint32 {
		if x < 0 || y < 0 || x >= p.w || y >= p.h {
			return 255
		}
		return uint32(p.pix[y*p.w+x])
	}
	var a, b, c, d uint32
	if x0 >= 0 && y0 >= 0 && x0+1 < p.w && y0+1 < p.h {
		i := y0*p.w + x0
		a, b, c, d = uint32(p.pix[i]), uint32(p.pix[i+1]), uint32(p.pix[i+p.w]), uint32(p.pix[i+p.w+1])
	} else {
		a, b, c, d = at(x0, y0), at(x0+1, y0), at(x0, y0+1), at(x0+1, y0+1)
	}
	top := a*(256-ax) + b*ax
	bottom := c*(256-ax) + d*ax
	return byte((top*(256-ay) + bottom*ay + 1<<15) >> 16)
}

// inverted returns the negative of p, for light codes on dark ground.
func (p *plane) inverted() *plane {
	q := newPlane(p.w, p.h)
	for i, v := range p.pix {
		q.pix[i] = 255 - v
	}
	return q
}

// blurred returns p smoothed with a 3×3 box, in two passes: sensor noise,
// halftone dots and cloth weave average into flat modules. Edge pixels
// average what lies inside the frame.
func (p *plane) blurred() *plane {
	tmp := make([]uint16, len(p.pix)) // row means, times 3
	for y := 0; y < p.h; y++ {
		row, out := p.pix[y*p.w:(y+1)*p.w], tmp[y*p.w:(y+1)*p.w]
		for x := range row {
			s, n := uint16(row[x]), uint16(1)
			if x > 0 {
				s, n = s+uint16(row[x-1]), n+1
			}
			if x+1 < len(row) {
				s, n = s+uint16(row[x+1]), n+1
			}
			out[x] = s * 3 / n // three times the mean, at most 765
		}
	}
	q := newPlane(p.w, p.h)
	for y := 0; y < p.h; y++ {
		up, down := max(y-1, 0), min(y+1, p.h-1)
		n := uint32(down-up+1) * 3
		for x := 0; x < p.w; x++ {
			var s uint32
			for yy := up; yy <= down; yy++ {
				s += uint32(tmp[yy*p.w+x])
			}
			q.pix[y*p.w+x] = byte(s / n)
		}
	}
	return q
}
