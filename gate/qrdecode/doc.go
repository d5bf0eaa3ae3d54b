// Package qrdecode reads the text of a QR code from a camera frame at a gate.
//
// It may import only the standard library and gozxing (the QR decoder
// DESIGN.md names); it knows nothing of passes, which are for the caller to
// verify.
//
// # How a frame is read
//
// [Decode] turns the frame into an 8-bit luminance plane once, then tries a
// fixed list of attempts, cheapest first, and stops at the first that gives a
// code: a shrunken copy of large frames, the frame as it is with two
// binarizers, its negative, an enlarged copy, and turned copies. Each attempt
// is gozxing's QR reader, whose Reed–Solomon check rejects a misread rather
// than returning wrong text; docs/decisions.md ("Camera decode (issue 4)")
// gives the order, the figures behind it and what was left out.
//
// A frame with no code runs every attempt, so it costs more than a frame with
// one; the list is short and its costly attempts are bounded by frame size.
//
// # Untrusted input
//
// Frames come from the network. [DecodeBytes] and [DecodeFile] accept only
// PNG and JPEG, read the header before the pixels and refuse more than
// [MaxDimension] pixels a side, [MaxPixels] in all or [MaxBytes] bytes.
// gozxing can panic on odd bit patterns; every attempt recovers and counts
// as no code, so no input makes this package panic.
package qrdecode
