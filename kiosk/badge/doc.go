// Package badge draws a visitor's badge as a 1-bit image at the size of a
// label printer's label, for the reception kiosk to print or show.
//
// It may import only the standard library, golang.org/x/image (the Go fonts
// and their rasterizer) and skip2/go-qrcode. It knows nothing of visits,
// stores or printers: the kiosk fills a [Badge] and picks a [Label];
// kiosk/printer sends the image to a Brother QL printer using the same
// [Label] values, so the label table exists once.
//
// # Layout
//
// A badge is drawn upright on the label, its width across the print head
// (62 mm, 696 dots at 300 dpi) and its height along the feed: the site's logo
// and name on top, a rule, the visitor's name large, their company, whom they
// visit, the visit type and date, and the pass's QR code at the bottom,
// centred with its quiet zone. docs/decisions.md ("Badges and label printers
// (issue 16)") gives the measures.
//
// Text shrinks to fit, then wraps onto its allowed lines, then ends in an
// ellipsis: nothing is drawn outside the label's printable area, whatever
// the name. The QR code's modules are whole dots, never scaled, so the code
// prints sharp; a token too long for the space is [ErrTokenTooLong] rather
// than a code too fine to scan. A logo that does not decode as a PNG, or is
// too large, is left out.
package badge
