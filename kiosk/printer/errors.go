package printer

import (
	"errors"
	"fmt"
)

// Reason is why a print failed, in terms a receptionist can act on. The
// kiosk keeps a message for each in its catalogues; the values are stored
// with failed jobs, so they never change.
type Reason string

// The reasons a print fails.
const (
	// Unreachable: the printer is off, not on the network, or refused the
	// connection.
	Unreachable Reason = "unreachable"
	// NoMedia: the printer has no labels, or its roll ended.
	NoMedia Reason = "no_media"
	// WrongMedia: the loaded labels are not the ones the badge is for.
	WrongMedia Reason = "wrong_media"
	// CoverOpen: the printer's cover is open.
	CoverOpen Reason = "cover_open"
	// TimedOut: the printer stopped answering.
	TimedOut Reason = "timed_out"
	// Interrupted: the connection ended after the job was sent and before
	// the printer said it printed: the label may have printed.
	Interrupted Reason = "interrupted"
	// PrinterFault: the printer reported another error (cutter jam, a
	// system error, ...); Error.Detail names it.
	PrinterFault Reason = "printer_fault"
	// MayHavePrinted: the appliance stopped while the job was being sent;
	// see Queue.
	MayHavePrinted Reason = "may_have_printed"
)

// Sentinels for errors.Is, one for each Reason that a print returns.
var (
	// ErrUnreachable is returned when the printer cannot be reached.
	ErrUnreachable = errors.New("printer off or unreachable")
	// ErrNoMedia is returned when the printer is out of labels.
	ErrNoMedia = errors.New("out of labels")
	// ErrWrongMedia is returned when other labels than the badge's are
	// loaded.
	ErrWrongMedia = errors.New("wrong labels loaded")
	// ErrCoverOpen is returned when the printer's cover is open.
	ErrCoverOpen = errors.New("printer cover open")
	// ErrTimedOut is returned when the printer stops answering in time.
	ErrTimedOut = errors.New("printer timed out")
	// ErrInterrupted is returned when the connection ends after the job
	// was sent and before the printer confirmed it.
	ErrInterrupted = errors.New("connection lost during printing; the label may have printed")
	// ErrPrinterFault is returned for any other error the printer reports.
	ErrPrinterFault = errors.New("printer error")
)

var reasonErr = map[Reason]error{
	Unreachable:  ErrUnreachable,
	NoMedia:      ErrNoMedia,
	WrongMedia:   ErrWrongMedia,
	CoverOpen:    ErrCoverOpen,
	TimedOut:     ErrTimedOut,
	Interrupted:  ErrInterrupted,
	PrinterFault: ErrPrinterFault,
}

// Error is a failed print: the printer's address, the Reason, and what lies
// behind it. errors.Is(err, ErrNoMedia) and the like match its Reason.
type Error struct {
	Addr   string
	Reason Reason
	// Detail is the printer's own words or the loaded media ("29 mm
	// continuous loaded, 62 mm continuous needed"); may be empty.
	Detail string
	// Err is the underlying network error, if any.
	Err error
}

func (e *Error) Error() string {
	msg := string(e.Reason)
	if s, ok := reasonErr[e.Reason]; ok {
		msg = s.Error()
	}
	msg += " at " + e.Addr
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap gives the Reason's sentinel and the underlying error.
func (e *Error) Unwrap() []error {
	var errs []error
	if s, ok := reasonErr[e.Reason]; ok {
		errs = append(errs, s)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// ReasonOf returns the Reason of a print error, PrinterFault for an error
// that is not an *Error, and "" for nil.
func ReasonOf(err error) Reason {
	if err == nil {
		return ""
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Reason
	}
	return PrinterFault
}

// ErrMalformed is returned by Decode and ParseStatus for bytes that are not
// what the raster command reference allows; the error says what and where.
var ErrMalformed = errors.New("malformed raster data")

func malformed(off int64, format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", ErrMalformed, off, fmt.Sprintf(format, args...))
}

// Errors of Encode.
var (
	// ErrImageSize is returned by Encode when the image is not the label's
	// printable width, or its length is outside what the label takes.
	ErrImageSize = errors.New("image does not fit the label")
)
