package printer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"net"
	"os"
	"time"

	"github.com/svc-vms/svc/kiosk/badge"
)

// Port is the raw printing port Brother's network printers listen on.
const Port = "9100"

// Client prints on Brother QL printers over TCP. The zero Client uses the
// defaults.
type Client struct {
	// DialTimeout bounds connecting; 0 means 5 s.
	DialTimeout time.Duration
	// Timeout bounds a whole print when ctx has no earlier deadline: the
	// status, the job and the wait for "printing completed"; 0 means 30 s.
	Timeout time.Duration
	Options Options
}

// Print prints img on one label with a zero Client.
func Print(ctx context.Context, addr string, img image.Image, label badge.Label) error {
	return (&Client{}).Print(ctx, addr, img, label)
}

// PrintPNG decodes a PNG and prints it; a PNG that does not decode is an
// error that is not an *Error, before any connection.
func (c *Client) PrintPNG(ctx context.Context, addr string, data []byte, label badge.Label) error {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("decode badge PNG: %w", err)
	}
	return c.Print(ctx, addr, img, label)
}

// Print prints img on one label on the printer at addr (host:port; a
// host alone means port 9100). It connects, asks the printer's status and
// refuses, before sending anything, when the printer has no labels, other
// labels than label, or its cover open; then it sends the job and returns
// once the printer reports "printing completed".
//
// Errors from the printer or the network are *Error with a Reason:
// Unreachable, NoMedia, WrongMedia, CoverOpen, TimedOut, Interrupted (the
// job was sent and the connection ended: the label may have printed) or
// PrinterFault. An image that does not fit the label is ErrImageSize.
func (c *Client) Print(ctx context.Context, addr string, img image.Image, label badge.Label) error {
	job, err := Encode(img, label, c.Options)
	if err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, Port)
	}
	timeout := orDefault(c.Timeout, 30*time.Second)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	d := net.Dialer{Timeout: orDefault(c.DialTimeout, 5*time.Second)}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return &Error{Addr: addr, Reason: Unreachable, Err: err}
	}
	defer conn.Close()
	// Every read and write ends at ctx's end: its deadline, or at once
	// when it is cancelled.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	fail := func(r Reason, err error) error {
		if errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil {
			r = TimedOut
		}
		return &Error{Addr: addr, Reason: r, Err: err}
	}

	hello := append(make([]byte, invalidateLen), esc, '@', esc, 'i', escStatus)
	if _, err := conn.Write(hello); err != nil {
		return fail(Unreachable, err)
	}
	st, err := readStatus(conn)
	if err != nil {
		return fail(Unreachable, err)
	}
	if err := check(st, label); err != nil {
		err.Addr = addr
		return err
	}

	if _, err := conn.Write(job); err != nil {
		return fail(Interrupted, err)
	}
	// The printer reports phase changes and notifications before it says
	// "printing completed"; ctx's deadline bounds the wait.
	for {
		st, err := readStatus(conn)
		if err != nil {
			return fail(Interrupted, err)
		}
		switch st.Type {
		case StatusCompleted:
			return nil
		case StatusError:
			if err := check(st, label); err != nil {
				err.Addr = addr
				return err
			}
			return &Error{Addr: addr, Reason: PrinterFault, Detail: "error reported without error bits"}
		case StatusOff:
			return &Error{Addr: addr, Reason: Unreachable, Detail: "printer turned off"}
		}
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// readStatus reads one 32-byte status reply.
func readStatus(r io.Reader) (Status, error) {
	var b [StatusLen]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Status{}, fmt.Errorf("read status: %w", err)
	}
	return ParseStatus(b[:])
}

// check returns the *Error, without Addr, that a status stands for when
// printing on label, or nil when the printer is ready for it.
func check(st Status, label badge.Label) *Error {
	switch {
	case st.Err1&(Err1NoMedia|Err1EndOfMedia) != 0 || st.MediaType == 0 && st.Err2&Err2CoverOpen == 0:
		return &Error{Reason: NoMedia, Detail: st.Errors()}
	case st.Err2&Err2CoverOpen != 0:
		return &Error{Reason: CoverOpen}
	case st.Err2&Err2ReplaceMedia != 0:
		return &Error{Reason: WrongMedia, Detail: fmt.Sprintf("%s loaded, %s needed", st.media(), label)}
	case st.Err1&Err1TurnedOff != 0:
		return &Error{Reason: Unreachable, Detail: "printer turned off"}
	case st.Err1&^Err1InUse != 0 || st.Err2 != 0:
		return &Error{Reason: PrinterFault, Detail: st.Errors()}
	}
	if st.Continuous() != label.Continuous || !st.Continuous() && !st.DieCut() ||
		st.MediaWidth != label.WidthMM || !label.Continuous && st.MediaLength != label.LengthMM {
		return &Error{Reason: WrongMedia, Detail: fmt.Sprintf("%s loaded, %s needed", st.media(), label)}
	}
	return nil
}
