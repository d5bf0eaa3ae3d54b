package reader

import "errors"

// ErrBaud is returned by NewSerial for a rate the serial driver does not
// offer.
var ErrBaud = errors.New("reader: unsupported baud rate")

// ErrSerialUnsupported is returned by a serial reader's Run on a system
// other than Linux, where the appliance does not run.
var ErrSerialUnsupported = errors.New("reader: serial readers need Linux")
