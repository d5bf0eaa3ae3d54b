package printer

import "fmt"

// packBits appends src compressed as TIFF PackBits (TIFF 6.0, section 9),
// which the reference's "TIFF compression mode" is: a header byte n, then
// n+1 literal bytes for n in 0..127, or one byte repeated 1-n times for n
// in -127..-1.
//
// Runs of three or more bytes are repeated and everything else is literal,
// so a line never grows by more than a header byte per 128.
func packBits(dst, src []byte) []byte {
	run := func(i int) int {
		j := i + 1
		for j < len(src) && src[j] == src[i] && j-i < 128 {
			j++
		}
		return j - i
	}
	for i := 0; i < len(src); {
		if n := run(i); n >= 3 {
			dst = append(dst, byte(int8(1-n)), src[i])
			i += n
			continue
		}
		start := i
		for i < len(src) && i-start < 128 && run(i) < 3 {
			i++
		}
		dst = append(dst, byte(i-start-1))
		dst = append(dst, src[start:i]...)
	}
	return dst
}

// unpackBits expands src into dst, which it must fill exactly. The header
// -128 is a no-op, as TIFF says.
func unpackBits(dst, src []byte) error {
	o := 0
	for i := 0; i < len(src); {
		h := int8(src[i])
		i++
		switch {
		case h >= 0:
			n := int(h) + 1
			if i+n > len(src) {
				return fmt.Errorf("literal of %d bytes runs past the line's %d", n, len(src))
			}
			if o+n > len(dst) {
				return fmt.Errorf("expands past %d bytes", len(dst))
			}
			copy(dst[o:], src[i:i+n])
			i += n
			o += n
		case h == -128:
		default:
			n := 1 - int(h)
			if i >= len(src) {
				return fmt.Errorf("run of %d has no byte to repeat", n)
			}
			if o+n > len(dst) {
				return fmt.Errorf("expands past %d bytes", len(dst))
			}
			for k := range n {
				dst[o+k] = src[i]
			}
			i++
			o += n
		}
	}
	if o != len(dst) {
		return fmt.Errorf("expands to %d bytes, want %d", o, len(dst))
	}
	return nil
}
