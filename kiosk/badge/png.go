package badge

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"sync"
)

// encodePNG writes img as png.Encode does, byte for byte, when img has a
// palette of at most two colours and indexes 0 and 1 only (what Render
// draws): a 1-bit PNG, rows unfiltered, zlib at the default level, IDAT
// chunks of 32 KiB. It packs each row from Pix eight dots at a time,
// where png.Encode asks for every dot through an interface call
// (ColorIndexAt): half of a badge's time went there. Other images go to
// png.Encode.
func encodePNG(img *image.Paletted) ([]byte, error) {
	var buf bytes.Buffer
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if len(img.Palette) == 0 || len(img.Palette) > 2 || w <= 0 || h <= 0 || int64(w) >= 1<<31 || int64(h) >= 1<<31 {
		err := png.Encode(&buf, img)
		return buf.Bytes(), err
	}
	buf.Grow(16 << 10)
	buf.WriteString("\x89PNG\r\n\x1a\n")
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:4], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:8], uint32(h))
	ihdr[8], ihdr[9] = 1, 3 // bit depth 1, paletted
	writeChunk(&buf, "IHDR", ihdr[:])
	var plte, trns []byte
	alpha := false
	for _, c := range img.Palette {
		n := color.NRGBAModel.Convert(c).(color.NRGBA)
		plte = append(plte, n.R, n.G, n.B)
		trns = append(trns, n.A)
		alpha = alpha || n.A != 0xff
	}
	writeChunk(&buf, "PLTE", plte)
	if alpha {
		last := len(trns) - 1
		for trns[last] == 0xff {
			last--
		}
		writeChunk(&buf, "tRNS", trns[:last+1])
	}

	bw := bufio.NewWriterSize(idatWriter{&buf}, 1<<15)
	zw, _ := zlibWriters.Get().(*zlib.Writer)
	if zw == nil {
		var err error
		if zw, err = zlib.NewWriterLevel(bw, zlib.DefaultCompression); err != nil {
			return nil, err
		}
	} else {
		zw.Reset(bw)
	}
	defer zlibWriters.Put(zw)
	row := make([]byte, 1+(w+7)/8) // row[0] is the filter: none
	for y := range h {
		pix := img.Pix[y*img.Stride : y*img.Stride+w]
		clear(row[1:])
		for x, v := range pix {
			if v != 0 {
				row[1+x>>3] |= 0x80 >> (x & 7)
			}
		}
		if _, err := zw.Write(row); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, err
	}
	writeChunk(&buf, "IEND", nil)
	return buf.Bytes(), nil
}

// zlibWriters are deflate compressors to reuse: each holds about 800 KB
// of tables, which a badge would otherwise allocate anew.
var zlibWriters sync.Pool

// idatWriter writes each Write as one IDAT chunk.
type idatWriter struct{ buf *bytes.Buffer }

func (w idatWriter) Write(b []byte) (int, error) {
	writeChunk(w.buf, "IDAT", b)
	return len(b), nil
}

func writeChunk(buf *bytes.Buffer, name string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	buf.Write(n[:])
	buf.WriteString(name)
	buf.Write(data)
	crc := crc32.NewIEEE()
	crc.Write([]byte(name))
	crc.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	buf.Write(n[:])
}
