package printer

import (
	"fmt"
	"image/color"
	"strings"
)

var palette = color.Palette{color.White, color.Black}

// StatusLen is the length of a status reply.
const StatusLen = 32

// Status types of a status reply (byte 18).
const (
	StatusReply     = 0x00 // reply to a status request
	StatusCompleted = 0x01 // printing completed
	StatusError     = 0x02 // error occurred
	StatusOff       = 0x04 // turned off
	StatusNotify    = 0x05 // notification
	StatusPhase     = 0x06 // phase change
)

// Phases of a status reply (byte 19).
const (
	PhaseReceiving = 0x00 // waiting to receive
	PhasePrinting  = 0x01
)

// Error information 1 (byte 8) and 2 (byte 9) bits.
const (
	Err1NoMedia    = 0x01
	Err1EndOfMedia = 0x02
	Err1CutterJam  = 0x04
	Err1InUse      = 0x10
	Err1TurnedOff  = 0x20
	Err1FanMotor   = 0x80

	Err2ReplaceMedia = 0x01
	Err2BufferFull   = 0x02
	Err2Comms        = 0x04
	Err2Image        = 0x08
	Err2CoverOpen    = 0x10
	Err2Feed         = 0x40 // leading edge detection (feeding) error
	Err2System       = 0x80
)

var (
	err1Names = [8]string{"no media", "end of media", "cutter jam", "", "printer in use", "printer turned off", "", "fan motor error"}
	err2Names = [8]string{"replace media", "expansion buffer full", "communication error", "image error", "cover open", "", "feeding error", "system error"}
)

// Status is a printer's 32-byte status reply.
type Status struct {
	Err1, Err2 byte
	// MediaWidth and MediaLength are in millimetres; MediaLength is 0 for
	// continuous rolls.
	MediaWidth, MediaLength int
	// MediaType is 0 without media, 0x0A or 0x4A for continuous rolls and
	// 0x0B or 0x4B for die-cut labels (the QL-700 series reports the
	// first, the QL-800 series the second).
	MediaType   byte
	Mode        byte
	Type        byte
	Phase       byte
	PhaseNumber uint16
	Notify      byte
}

// ParseStatus reads a status reply. It checks the fixed bytes that mark
// one (print head mark 0x80, size 0x20) and returns ErrMalformed otherwise.
func ParseStatus(b []byte) (Status, error) {
	if len(b) != StatusLen {
		return Status{}, fmt.Errorf("%w: status reply of %d bytes, want %d", ErrMalformed, len(b), StatusLen)
	}
	if b[0] != 0x80 || b[1] != StatusLen {
		return Status{}, fmt.Errorf("%w: status reply starts % x, want 80 20", ErrMalformed, b[:2])
	}
	return Status{
		Err1: b[8], Err2: b[9],
		MediaWidth: int(b[10]), MediaType: b[11], Mode: b[15], MediaLength: int(b[17]),
		Type: b[18], Phase: b[19], PhaseNumber: uint16(b[20])<<8 | uint16(b[21]), Notify: b[22],
	}, nil
}

// Bytes encodes the status as a QL-820NWB would send it.
func (s Status) Bytes() []byte {
	b := make([]byte, StatusLen)
	b[0], b[1], b[2], b[3], b[4], b[5], b[6] = 0x80, StatusLen, 'B', '4', '1', '0', '0'
	b[8], b[9] = s.Err1, s.Err2
	b[10], b[11] = byte(s.MediaWidth), s.MediaType
	b[14], b[15] = 0x3f, s.Mode
	b[17], b[18], b[19] = byte(s.MediaLength), s.Type, s.Phase
	b[20], b[21], b[22] = byte(s.PhaseNumber>>8), byte(s.PhaseNumber), s.Notify
	return b
}

// Continuous reports whether a continuous roll is loaded, DieCut whether
// die-cut labels are.
func (s Status) Continuous() bool { return s.MediaType == 0x0a || s.MediaType == 0x4a }

// DieCut reports whether die-cut labels are loaded.
func (s Status) DieCut() bool { return s.MediaType == 0x0b || s.MediaType == 0x4b }

// Errors names the error bits set, in the reference's words.
func (s Status) Errors() string {
	var names []string
	for i := range 8 {
		if s.Err1&(1<<i) != 0 && err1Names[i] != "" {
			names = append(names, err1Names[i])
		}
	}
	for i := range 8 {
		if s.Err2&(1<<i) != 0 && err2Names[i] != "" {
			names = append(names, err2Names[i])
		}
	}
	return strings.Join(names, ", ")
}

// media says what is loaded, for error details.
func (s Status) media() string {
	switch {
	case s.Continuous():
		return fmt.Sprintf("%d mm continuous", s.MediaWidth)
	case s.DieCut():
		return fmt.Sprintf("%d x %d mm die-cut", s.MediaWidth, s.MediaLength)
	}
	return "no labels"
}
