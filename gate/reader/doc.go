// Package reader turns a gate's inputs into scans: text lines from an IP
// reader on a TCP port, text lines from a serial (USB) QR reader, and
// camera frames posted over HTTP. Each hands every scan to a Deliver
// function with the gate's ID, the text and the time it was read; what a
// scan means is the caller's (gate.Gate.Scan).
//
// It may import the standard library, golang.org/x/sys/unix (termios, for
// serial devices on Linux) and gate/qrdecode.
//
// # Lines
//
// TCP and serial readers send one scan a line. A line ends at LF, CR or
// CRLF (QR readers are set to either); empty lines are skipped. A line
// longer than MaxLine bytes, or that is not valid UTF-8, is dropped whole
// and logged: a pass token is short ASCII, so such a line is noise on the
// wire or another device, never a pass. Text left when the connection
// closes without a line end is a scan too.
//
// # Frames
//
// Frames serves POST /gates/{gate_id}/frames: a JPEG or PNG body, at most
// MaxFrame bytes, decoded by gate/qrdecode. A frame with a code is
// delivered and answered 200; without one, 422 with a JSON error. At
// most a few frames are decoded at once (a frame without a code costs tens
// of milliseconds of CPU); more are answered 503 rather than queued, since
// a camera sends a fresher frame next.
//
// # Repeats
//
// A camera sees the same pass in frame after frame, and a serial reader
// in continuous mode reads it again and again. Debounce wraps a Deliver so
// that the same text at the same gate within a window is delivered once.
package reader
