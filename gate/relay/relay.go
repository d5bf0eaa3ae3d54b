package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"periph.io/x/conn/v3/gpio"

	"github.com/svc-vms/svc/shared/hardware"
)

const (
	// DefaultPulse is the pulse length when Config.Pulse is zero: long
	// enough for common turnstile controllers to latch one passage.
	DefaultPulse = hardware.DefaultPulse

	// MaxPulse bounds every pulse. A relay held longer is a gate left
	// open, not an admit, so a longer request is refused rather than obeyed.
	MaxPulse = hardware.MaxPulse
)

// Config describes one turnstile relay: Pin names the GPIO line, as Open
// resolves it ("GPIO17"), which the relay uses in its errors; ActiveLow is
// set for boards that switch when the line is low; Pulse is how long
// Pulse(ctx, 0) holds the relay, zero meaning DefaultPulse. It is the
// hardware document's relay, whose Validate names the first bad field:
// the rules are the document's, checked once.
type Config = hardware.Relay

// Output is the line a Relay drives: high is the electrical level, which
// the relay has already inverted for an active-low board. Out returns an
// error when the level could not be set.
type Output interface {
	Out(high bool) error
}

// PinOutput adapts a periph output pin, from Open, a Simulated pin or a
// gpiotest pin, to an Output.
func PinOutput(p gpio.PinOut) Output { return pinOutput{p} }

type pinOutput struct{ p gpio.PinOut }

func (o pinOutput) Out(high bool) error { return o.p.Out(gpio.Level(high)) }

// Relay pulses one turnstile's relay. It is safe for concurrent use.
//
// Pulses that overlap merge: the pin goes active when the first starts and
// inactive when the last still-waiting caller's window ends, so a second
// admit during a pulse extends it to end at now+d (never earlier than the
// first one's end) and the relay is never toggled in between. A caller whose
// context ends withdraws its own window only: the pin goes inactive early
// when no other caller still holds it.
type Relay struct {
	name             string
	out              Output
	active, inactive bool
	pulse            time.Duration

	mu      sync.Mutex
	holders int // Pulse calls whose window is running
	closed  bool
	closing chan struct{} // closed by Close, to end running pulses
}

// New returns a relay on out, after driving out inactive: a relay must
// never start out holding a gate open. It returns cfg's validation error,
// or the error of driving the pin.
func New(out Output, cfg Config) (*Relay, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Pulse == 0 {
		cfg.Pulse = DefaultPulse
	}
	r := &Relay{
		name:     cfg.Pin,
		out:      out,
		active:   !cfg.ActiveLow,
		inactive: cfg.ActiveLow,
		pulse:    cfg.Pulse,
		closing:  make(chan struct{}),
	}
	if err := out.Out(r.inactive); err != nil {
		return nil, fmt.Errorf("relay %s: drive inactive: %w", r.name, err)
	}
	return r, nil
}

// Pulse drives the relay active, waits d (the configured length when d is
// zero) and drives it inactive, merging with pulses already running as the
// type's comment says. It returns when the caller's own window ends, which
// may be before the pin goes inactive if another caller extended the pulse.
//
// A non-nil error means the caller cannot count on a passage having been
// freed, or on the gate being shut again, and must record it:
//   - ErrPulseLength for d < 0 or d > MaxPulse, before touching the pin;
//   - ErrClosed when the relay is or gets closed;
//   - the context's error when ctx ends first (the pin is driven inactive
//     unless another caller still holds it);
//   - the Output's error when the pin could not be driven active (Pulse
//     then also tries to drive it inactive) or back inactive.
func (r *Relay) Pulse(ctx context.Context, d time.Duration) error {
	finish, err := r.Start(ctx, d)
	if err != nil {
		return err
	}
	return finish()
}

// Start drives the relay active, as the first half of Pulse, and returns
// the second half: finish waits out the caller's window (d, the configured
// length when d is zero) and drives the relay inactive unless another
// caller still holds it. Start returns once the pin is active, so a gate
// can record the passage it freed before the pulse ends; finish must be
// called exactly once, and its error is Pulse's for the second half.
//
// Start's errors are Pulse's for the first half: ErrPulseLength, ErrClosed,
// the context's error, or the Output's error driving the pin active. After
// one of them no passage was freed.
func (r *Relay) Start(ctx context.Context, d time.Duration) (finish func() error, err error) {
	if d == 0 {
		d = r.pulse
	}
	if d < 0 || d > MaxPulse {
		return nil, fmt.Errorf("relay %s: pulse %v: %w", r.name, d, ErrPulseLength)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("relay %s: pulse: %w", r.name, err)
	}

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("relay %s: pulse: %w", r.name, ErrClosed)
	}
	if r.holders == 0 {
		if err := r.out.Out(r.active); err != nil {
			// Where the pin stands is unknown; leave it shut if we can.
			err = errors.Join(err, r.out.Out(r.inactive))
			r.mu.Unlock()
			return nil, fmt.Errorf("relay %s: drive active: %w", r.name, err)
		}
	}
	r.holders++
	r.mu.Unlock()
	t := time.NewTimer(d)
	return func() error { return r.finish(ctx, t) }, nil
}

// finish is the second half of a pulse started with timer t.
func (r *Relay) finish(ctx context.Context, t *time.Timer) error {
	defer t.Stop()
	var cut error
	select {
	case <-t.C:
	case <-ctx.Done():
		cut = fmt.Errorf("relay %s: pulse cut short: %w", r.name, ctx.Err())
	case <-r.closing:
		return fmt.Errorf("relay %s: pulse: %w", r.name, ErrClosed)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		// Close drove the pin inactive and forgot the holders.
		return cut
	}
	r.holders--
	if r.holders > 0 {
		return cut
	}
	if err := r.out.Out(r.inactive); err != nil {
		return errors.Join(cut, fmt.Errorf("relay %s: drive inactive: %w", r.name, err))
	}
	return cut
}

// Close drives the relay inactive, ending any pulse (its callers get
// ErrClosed), and refuses later pulses. It returns the error of driving the
// pin; later calls do nothing and return nil. It does not release the pin,
// which belongs to whoever opened it.
func (r *Relay) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.holders = 0
	close(r.closing)
	if err := r.out.Out(r.inactive); err != nil {
		return fmt.Errorf("relay %s: close: drive inactive: %w", r.name, err)
	}
	return nil
}

// levelReader is an Output that can read back the level it drives: a
// periph pin that is also an input (the Linux GPIO character device reads
// an output line's value) or a Simulated pin.
type levelReader interface {
	Level() (high bool, ok bool)
}

// Level reads the pin's level back when it is a gpio.PinIn; ok is false
// when it is output only.
func (o pinOutput) Level() (bool, bool) {
	in, ok := o.p.(gpio.PinIn)
	if !ok {
		return false, false
	}
	return bool(in.Read()), true
}

// SelfTest checks the relay without freeing a passage: it drives the pin
// inactive, as it already is between pulses, and reads the level back
// where the pin can be read. It never drives the pin active, which would
// open the gate; while a pulse runs it checks nothing and returns nil.
// It returns ErrClosed, the Output's error, or ErrSelfTest when the level
// read back is not the one driven.
func (r *Relay) SelfTest() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return fmt.Errorf("relay %s: self-test: %w", r.name, ErrClosed)
	case r.holders > 0:
		return nil // a pulse drives it: the pin worked a moment ago
	}
	if err := r.out.Out(r.inactive); err != nil {
		return fmt.Errorf("relay %s: self-test: drive inactive: %w", r.name, err)
	}
	if lr, ok := r.out.(levelReader); ok {
		if high, ok := lr.Level(); ok && high != r.inactive {
			return fmt.Errorf("relay %s: self-test: %w: drove %s, read %s", r.name, ErrSelfTest, levelName(r.inactive), levelName(high))
		}
	}
	return nil
}

func levelName(high bool) string {
	if high {
		return "high"
	}
	return "low"
}
