package reader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// Bauds are the rates NewSerial accepts.
var Bauds = []int{1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400}

// Reconnect delays of a serial reader whose device is missing or failed:
// the first retry after MinRetry, doubling up to MaxRetry.
const (
	MinRetry = 500 * time.Millisecond
	MaxRetry = 30 * time.Second
)

// Serial reads scans as text lines from a serial device: a USB QR reader
// in serial (CDC-ACM) mode, or one on a UART.
type Serial struct {
	path string
	baud int
	o    Options
}

// NewSerial returns a reader of the device at path (such as /dev/ttyACM0)
// at baud, one of Bauds. It opens nothing: Run does. It returns an error
// wrapping ErrBaud for another rate.
func NewSerial(path string, baud int, o Options) (*Serial, error) {
	if !slices.Contains(Bauds, baud) {
		return nil, fmt.Errorf("serial reader %s: %d: %w", path, baud, ErrBaud)
	}
	return &Serial{path: path, baud: baud, o: o.withDefaults("serial")}, nil
}

// Run opens the device, puts it in raw mode at the baud rate and reads
// lines until ctx ends, then returns nil. A device that is missing or
// fails (a reader unplugged) is logged and opened again, after MinRetry
// doubling up to MaxRetry, so one gate's reader never stops the others.
// On a system other than Linux it returns ErrSerialUnsupported.
func (s *Serial) Run(ctx context.Context) error {
	delay := MinRetry
	for {
		err := s.readOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrSerialUnsupported) {
			return err
		}
		s.o.Logger.Warn("serial reader: device unavailable; retrying", "device", s.path, "error", err.Error(), "retry_in", delay)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil
		}
		delay = min(2*delay, MaxRetry)
	}
}

// readOnce opens the device and reads it until it fails or ctx ends.
func (s *Serial) readOnce(ctx context.Context) error {
	f, err := openSerial(s.path, s.baud)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = f.Close() }) // wakes the blocked Read: ttys are in the runtime's poller
	defer stop()
	defer f.Close()
	s.o.Logger.Info("serial reader: open", "device", s.path, "baud", s.baud)
	err = readLines(ctx, f, s.o, "device", s.path)
	if errors.Is(err, io.EOF) {
		err = errors.New("device closed") // a tty reads EOF when the far end hangs up
	}
	return err
}

// serialFile is what openSerial returns: the device, readable and
// closable from another goroutine.
type serialFile = *os.File
