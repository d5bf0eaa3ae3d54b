package relay

import (
	"errors"
	"log/slog"
	"sync"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/physic"
	"periph.io/x/conn/v3/pin"
)

// Simulated is a GPIO pin with nothing behind it, for an appliance run on a
// development machine (`make run`): it logs every level written to it, so a
// pulse shows as two log lines, and keeps the writes for Writes. Set plays
// the outside world for an input, such as a door opening. It is safe for
// concurrent use.
type Simulated struct {
	name string
	log  *slog.Logger

	mu     sync.Mutex
	output bool // the last call was Out rather than In
	level  gpio.Level
	pull   gpio.Pull
	edge   gpio.Edge
	edged  chan struct{} // holds a token when an edge came since the last WaitForEdge
	writes []Write
}

// Write is one level written to a Simulated pin, and when.
type Write struct {
	At    time.Time
	Level gpio.Level
}

var _ gpio.PinIO = (*Simulated)(nil)

// NewSimulated returns a low simulated pin called name that logs to log
// (slog.Default() when nil).
func NewSimulated(name string, log *slog.Logger) *Simulated {
	if log == nil {
		log = slog.Default()
	}
	return &Simulated{name: name, log: log, edged: make(chan struct{}, 1)}
}

// Writes returns a copy of the levels written so far, oldest first.
func (p *Simulated) Writes() []Write {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Write(nil), p.writes...)
}

// Out implements gpio.PinOut: it records and logs l. It never fails.
func (p *Simulated) Out(l gpio.Level) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.output = true
	p.level = l
	p.writes = append(p.writes, Write{At: time.Now(), Level: l})
	p.log.Info("simulated pin out", "pin", p.name, "level", l.String())
	return nil
}

// Set changes the level the pin reads as an input, as a wire from outside
// would, and signals an edge to WaitForEdge when In asked for that kind.
func (p *Simulated) Set(l gpio.Level) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l == p.level {
		return
	}
	p.level = l
	p.log.Info("simulated pin input", "pin", p.name, "level", l.String())
	if p.edge == gpio.BothEdges || (p.edge == gpio.RisingEdge && l == gpio.High) || (p.edge == gpio.FallingEdge && l == gpio.Low) {
		select {
		case p.edged <- struct{}{}:
		default:
		}
	}
}

// In implements gpio.PinIn. A pull-up or pull-down sets the level, as it
// would on an unconnected pin; edges buffered before it are forgotten.
func (p *Simulated) In(pull gpio.Pull, edge gpio.Edge) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.output = false
	p.pull, p.edge = pull, edge
	switch pull {
	case gpio.PullUp:
		p.level = gpio.High
	case gpio.PullDown:
		p.level = gpio.Low
	}
	select {
	case <-p.edged:
	default:
	}
	return nil
}

// Read implements gpio.PinIn.
func (p *Simulated) Read() gpio.Level {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.level
}

// WaitForEdge implements gpio.PinIn: it reports whether Set made an edge of
// the kind In asked for before timeout (negative: no limit) ran out. Without
// edge detection it returns false at once.
func (p *Simulated) WaitForEdge(timeout time.Duration) bool {
	p.mu.Lock()
	edge := p.edge
	p.mu.Unlock()
	if edge == gpio.NoEdge {
		return false
	}
	select {
	case <-p.edged: // an edge already came: report it even with timeout 0
		return true
	default:
	}
	var expired <-chan time.Time
	if timeout >= 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-p.edged:
		return true
	case <-expired:
		return false
	}
}

// Pull implements gpio.PinIn.
func (p *Simulated) Pull() gpio.Pull {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pull
}

// DefaultPull implements gpio.PinIn.
func (p *Simulated) DefaultPull() gpio.Pull { return gpio.PullNoChange }

// PWM implements gpio.PinOut; a simulated pin has no PWM.
func (p *Simulated) PWM(gpio.Duty, physic.Frequency) error {
	return errors.New("simulated pin " + p.name + ": no PWM")
}

// String implements conn.Resource.
func (p *Simulated) String() string { return p.name }

// Halt implements conn.Resource; it does nothing.
func (p *Simulated) Halt() error { return nil }

// Name implements pin.Pin.
func (p *Simulated) Name() string { return p.name }

// Number implements pin.Pin; a simulated pin has no number.
func (p *Simulated) Number() int { return -1 }

// Function implements pin.Pin.
func (p *Simulated) Function() string { return string(p.Func()) }

// Func implements pin.PinFunc.
func (p *Simulated) Func() pin.Func {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.output {
		return gpio.OUT
	}
	return gpio.IN
}
