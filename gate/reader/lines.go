package reader

import (
	"context"
	"io"
	"log/slog"
	"time"
	"unicode/utf8"
)

// Deliver receives one scan: the gate it was read at, the text (without
// its line end) and when it was read. It is called from the reader's
// goroutine and may block; the reader reads on when it returns.
type Deliver func(ctx context.Context, gateID, text string, at time.Time)

// DefaultMaxLine is Options.MaxLine when zero: four times the longest
// pass token, room for a reader's prefix or suffix.
const DefaultMaxLine = 1024

// Options are what every line reader needs.
type Options struct {
	// GateID is the gate the reader is at, passed to Deliver.
	GateID  string
	Deliver Deliver
	// MaxLine is the longest line delivered, in bytes; 0 means
	// DefaultMaxLine.
	MaxLine int
	// Logger receives dropped lines and connection events; nil means
	// slog.Default().
	Logger *slog.Logger
	// Now gives the time of a scan; nil means time.Now.
	Now func() time.Time
}

func (o Options) withDefaults(kind string) Options {
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Logger = o.Logger.With("gate_id", o.GateID, "reader", kind)
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// readLines reads r until it fails and delivers each line. It returns
// r's error: io.EOF at a clean end, after delivering any text left.
func readLines(ctx context.Context, r io.Reader, o Options, attrs ...any) error {
	buf := make([]byte, 4096)
	line := make([]byte, 0, o.MaxLine)
	over := 0 // bytes of an over-long line seen so far; 0 when the line fits
	end := func() {
		switch {
		case over > 0:
			o.Logger.Warn("line dropped: longer than the limit", append(attrs, "bytes", over, "limit", o.MaxLine)...)
		case len(line) == 0:
		case !utf8.Valid(line):
			o.Logger.Warn("line dropped: not UTF-8", append(attrs, "bytes", len(line))...)
		default:
			o.Deliver(ctx, o.GateID, string(line), o.Now())
		}
		line, over = line[:0], 0
	}
	for {
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			switch {
			case b == '\n' || b == '\r':
				end()
			case over > 0:
				over++
			case len(line) == o.MaxLine:
				over = len(line) + 1
				line = line[:0]
			default:
				line = append(line, b)
			}
		}
		if err != nil {
			if err == io.EOF { // the peer finished its last line by closing
				end()
			}
			return err
		}
	}
}
