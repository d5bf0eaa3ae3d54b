package relay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"periph.io/x/conn/v3/gpio"

	"github.com/svc-vms/svc/shared/hardware"
)

// DefaultPoll is DoorConfig.Poll when zero.
const DefaultPoll = hardware.DefaultPoll

// DoorConfig describes a gate's door sensor, a contact on an input pin:
// the hardware document's door (Pin, ActiveLow, Pull: "up", "down",
// "float" or empty, Poll: how often WaitChange reads a pin without edge
// detection, zero meaning DefaultPoll), whose Validate names the first bad
// field.
type DoorConfig = hardware.Door

// pullOf is the periph setting of a valid config's Pull.
func pullOf(c DoorConfig) gpio.Pull {
	switch c.Pull {
	case "up":
		return gpio.PullUp
	case "down":
		return gpio.PullDown
	case "float":
		return gpio.Float
	}
	return gpio.PullNoChange
}

// DoorSensor reports whether a gate's door is open. It is safe for
// concurrent use; concurrent WaitChange calls take turns.
type DoorSensor struct {
	name  string
	pin   gpio.PinIn
	open  gpio.Level // the level that means open
	poll  time.Duration
	edges bool // the pin accepted edge detection

	turn chan struct{} // holds a token while a WaitChange runs
	mu   sync.Mutex
	last bool // what Open or WaitChange last reported
}

// NewDoorSensor sets pin up as an input with edge detection on both edges,
// falling back to polling when the pin refuses edges, and reads the door's
// state as the one WaitChange starts from. It returns cfg's validation error
// or the pin's error when it cannot be an input at all.
func NewDoorSensor(pin gpio.PinIn, cfg DoorConfig) (*DoorSensor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pull := pullOf(cfg)
	if cfg.Poll == 0 {
		cfg.Poll = DefaultPoll
	}
	s := &DoorSensor{
		name:  cfg.Pin,
		pin:   pin,
		open:  gpio.Level(!cfg.ActiveLow),
		poll:  cfg.Poll,
		edges: true,
		turn:  make(chan struct{}, 1),
	}
	if err := pin.In(pull, gpio.BothEdges); err != nil {
		s.edges = false
		if err := pin.In(pull, gpio.NoEdge); err != nil {
			return nil, fmt.Errorf("door sensor %s: set up input: %w", cfg.Pin, err)
		}
	}
	s.last = s.read()
	return s, nil
}

func (s *DoorSensor) read() bool { return s.pin.Read() == s.open }

// Open reads whether the door is open now. The error is nil: a periph pin
// cannot report a failed read. It is there so that a sensor that can (a
// networked one) fits the same method.
func (s *DoorSensor) Open() (bool, error) {
	open := s.read()
	s.mu.Lock()
	s.last = open
	s.mu.Unlock()
	return open, nil
}

// WaitChange blocks until the door's state differs from the one Open or
// WaitChange last reported (or, before either, the one read by
// NewDoorSensor) and returns the new state. With edge detection it wakes on
// the pin's edge; without, it reads the pin every Poll, so a change shorter
// than Poll can go unseen. A change that came and went between two reads is
// not reported.
//
// When ctx ends first it returns the state last read and ctx's error, at
// most Poll after ctx ended (a periph edge wait cannot be interrupted).
func (s *DoorSensor) WaitChange(ctx context.Context) (open bool, err error) {
	select {
	case s.turn <- struct{}{}:
		defer func() { <-s.turn }()
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.last, fmt.Errorf("door sensor %s: wait: %w", s.name, ctx.Err())
	}

	var tick <-chan time.Time
	if !s.edges {
		t := time.NewTicker(s.poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		open := s.read()
		s.mu.Lock()
		changed := open != s.last
		s.last = open
		s.mu.Unlock()
		if changed {
			return open, nil
		}
		if err := ctx.Err(); err != nil {
			return open, fmt.Errorf("door sensor %s: wait: %w", s.name, err)
		}
		if s.edges {
			// Whether an edge came or the wait timed out, the level read
			// next decides.
			s.pin.WaitForEdge(s.poll)
			continue
		}
		select {
		case <-tick:
		case <-ctx.Done():
		}
	}
}
