package qrdecode

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DecodeFiles decodes each file in paths (PNG or JPEG) and writes one line
// per file to w, in order: the text of its QR code, escaped, or
// "error: FILE: REASON" when the file cannot be read or holds no readable
// code. It returns how many files were decoded; err is non-nil only when
// writing to w fails, so a caller tells partial success by comparing decoded
// with len(paths).
//
// The escaping makes each result one printable line that cannot pass for an
// error line, and reading the escapes back gives the exact text:
//
//   - a backslash is written \\, CR \r, LF \n and tab \t;
//   - any other control character (C0, DEL, C1) and the line and paragraph
//     separators U+2028 and U+2029 are written \uHHHH (\u001b for ESC), so
//     a code cannot move a terminal's cursor or split the line;
//   - a byte that is not valid UTF-8 is written \xHH;
//   - a text that starts with "error:" has its "e" written \u0065.
//
// Everything else is written as it is, so plain text, URLs and pass tokens
// print unchanged. File names and reasons in error lines are escaped the
// same way.
func DecodeFiles(paths []string, w io.Writer) (decoded int, err error) {
	for _, path := range paths {
		text, derr := DecodeFile(path)
		var line string
		if derr != nil {
			line = "error: " + escape(path) + ": " + escape(derr.Error())
		} else {
			line = escapeResult(text)
			decoded++
		}
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			return decoded, fmt.Errorf("write result for %s: %w", path, err)
		}
	}
	return decoded, nil
}

// escapeResult is escape plus the rule that keeps a decoded text from
// looking like an error line.
func escapeResult(text string) string {
	s := escape(text)
	if strings.HasPrefix(s, "error:") {
		s = `\u0065` + s[1:]
	}
	return s
}

// escape applies DecodeFiles's escapes to s.
func escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case mustEscape(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || r == '\\' || mustEscape(r) {
			return true
		}
		i += n
	}
	return false
}

// mustEscape reports whether r is a control character or a line separator.
func mustEscape(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}
