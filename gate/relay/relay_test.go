package relay_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"

	"github.com/svc-vms/svc/gate/relay"
)

// write is one level a recorder saw, at its (synctest) time offset.
type write struct {
	at    time.Duration
	level gpio.Level
}

// recorder is a gpiotest pin that also keeps every level written to it
// with the time since the recorder was made: gpiotest.Pin keeps only the
// current level.
type recorder struct {
	*gpiotest.Pin
	start time.Time

	mu     sync.Mutex
	writes []write
}

func newRecorder(tb testing.TB) *recorder {
	tb.Helper()
	return &recorder{Pin: &gpiotest.Pin{N: "GPIO17"}, start: time.Now()}
}

func (r *recorder) Out(l gpio.Level) error {
	r.mu.Lock()
	r.writes = append(r.writes, write{time.Since(r.start), l})
	r.mu.Unlock()
	return r.Pin.Out(l)
}

func (r *recorder) Writes() []write {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]write(nil), r.writes...)
}

// fakeOutput is an Output whose behaviour a test sets.
type fakeOutput struct {
	out func(high bool) error
}

func (f fakeOutput) Out(high bool) error { return f.out(high) }

func newRelay(tb testing.TB, out relay.Output, cfg relay.Config) *relay.Relay {
	tb.Helper()
	r, err := relay.New(out, cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return r
}

func assertWrites(tb testing.TB, got []write, want ...write) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Fatalf("writes = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			tb.Fatalf("writes = %v, want %v", got, want)
		}
	}
}

const (
	low  = gpio.Low
	high = gpio.High
	ms   = time.Millisecond
)

// The tests run in synctest bubbles, where time is fake: a 300ms pulse ends
// exactly 300ms after it began, and the test takes no real time.

func TestRelay_PulseDrivesActiveThenInactive(t *testing.T) {
	for _, tc := range []struct {
		name              string
		activeLow         bool
		idle, active      gpio.Level
		d, configured, at time.Duration
	}{
		{name: "active high, given length", idle: low, active: high, d: 300 * ms, configured: time.Second, at: 300 * ms},
		{name: "active low, given length", activeLow: true, idle: high, active: low, d: 300 * ms, configured: time.Second, at: 300 * ms},
		{name: "configured length", idle: low, active: high, d: 0, configured: 750 * ms, at: 750 * ms},
		{name: "default length", idle: low, active: high, d: 0, configured: 0, at: relay.DefaultPulse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pin := newRecorder(t)
				r := newRelay(t, relay.PinOutput(pin), relay.Config{Pin: "GPIO17", ActiveLow: tc.activeLow, Pulse: tc.configured})
				assertWrites(t, pin.Writes(), write{0, tc.idle})

				if err := r.Pulse(t.Context(), tc.d); err != nil {
					t.Fatalf("Pulse: %v", err)
				}
				assertWrites(t, pin.Writes(), write{0, tc.idle}, write{0, tc.active}, write{tc.at, tc.idle})
				if pin.Read() != tc.idle {
					t.Fatalf("pin reads %v after the pulse, want %v", pin.Read(), tc.idle)
				}
			})
		})
	}
}

// One test on the real clock, to show nothing above depends on fake time.
// It asserts only that the pulse lasted at least its length: a loaded
// machine may make it longer.
func TestRelay_PulseRealClock(t *testing.T) {
	pin := newRecorder(t)
	r := newRelay(t, relay.PinOutput(pin), relay.Config{Pin: "GPIO17"})
	if err := r.Pulse(t.Context(), 20*ms); err != nil {
		t.Fatalf("Pulse: %v", err)
	}
	w := pin.Writes()
	if len(w) != 3 || w[0].level != low || w[1].level != high || w[2].level != low {
		t.Fatalf("writes = %v, want low, high, low", w)
	}
	if held := w[2].at - w[1].at; held < 20*ms {
		t.Fatalf("relay held for %v, want at least 20ms", held)
	}
}

func TestRelay_OverlappingPulsesExtend(t *testing.T) {
	for _, tc := range []struct {
		name             string
		first, second    time.Duration // lengths; the second starts 50ms after the first
		firstCancelAfter time.Duration // cut the first caller's context short (0: never)
		end              time.Duration
	}{
		{name: "second ends later", first: 100 * ms, second: 100 * ms, end: 150 * ms},
		{name: "second ends earlier", first: 200 * ms, second: 50 * ms, end: 200 * ms},
		{name: "first cancelled, second holds", first: time.Second, second: 100 * ms, firstCancelAfter: 60 * ms, end: 150 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pin := newRecorder(t)
				r := newRelay(t, relay.PinOutput(pin), relay.Config{Pin: "GPIO17"})

				ctx1 := t.Context()
				if tc.firstCancelAfter > 0 {
					var cancel context.CancelFunc
					ctx1, cancel = context.WithTimeout(ctx1, tc.firstCancelAfter)
					defer cancel()
				}
				first := make(chan error, 1)
				go func() { first <- r.Pulse(ctx1, tc.first) }()
				second := make(chan error, 1)
				go func() {
					<-time.After(50 * ms) // fake time: starts the second pulse at +50ms exactly
					second <- r.Pulse(t.Context(), tc.second)
				}()

				err1, err2 := <-first, <-second
				if tc.firstCancelAfter > 0 {
					if !errors.Is(err1, context.DeadlineExceeded) {
						t.Fatalf("first Pulse = %v, want deadline exceeded", err1)
					}
				} else if err1 != nil {
					t.Fatalf("first Pulse: %v", err1)
				}
				if err2 != nil {
					t.Fatalf("second Pulse: %v", err2)
				}
				assertWrites(t, pin.Writes(), write{0, low}, write{0, high}, write{tc.end, low})
			})
		})
	}
}

// The first caller returns when its own window ends, while the relay stays
// active for the second.
func TestRelay_OverlappingPulsesReturnAtOwnEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pin := newRecorder(t)
		r := newRelay(t, relay.PinOutput(pin), relay.Config{Pin: "GPIO17"})
		second := make(chan error, 1)
		go func() {
			<-time.After(50 * ms)
			second <- r.Pulse(t.Context(), 100*ms)
		}()
		start := time.Now()
		if err := r.Pulse(t.Context(), 100*ms); err != nil {
			t.Fatalf("first Pulse: %v", err)
		}
		if took := time.Since(start); took != 100*ms {
			t.Fatalf("first Pulse returned after %v, want 100ms", took)
		}
		if pin.Read() != high {
			t.Fatal("relay went inactive while the second pulse runs")
		}
		if err := <-second; err != nil {
			t.Fatalf("second Pulse: %v", err)
		}
		if pin.Read() != low {
			t.Fatal("relay active after both pulses")
		}
	})
}

func TestRelay_ContextCancelledMidPulse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pin := newRecorder(t)
		r := newRelay(t, relay.PinOutput(pin), relay.Config{Pin: "GPIO17", ActiveLow: true})
		ctx, cancel := context.WithTimeout(t.Context(), 100*ms)
		defer cancel()

		err := r.Pulse(ctx, time.Second)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Pulse = %v, want deadline exceeded", err)
		}
		assertWrites(t, pin.Writes(), write{0, high}, write{0, low}, write{100 * ms, high})
	})
}

func TestRelay_ContextDoneBeforePulse(t *testing.T) {
	pin := newRecorder(t)
	r := newRelay(t, relay.PinOutput(pin), relay.Config{Pin: "GPIO17"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := r.Pulse(ctx, 100*ms); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pulse = %v, want canceled", err)
	}
	if w := pin.Writes(); len(w) != 1 {
		t.Fatalf("writes = %v, want only the initial inactive one", w)
	}
}

func TestRelay_CloseLeavesInactive(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			pin := newRecorder(t)
			r := newRelay(t, relay.PinOutput(pin), relay.Config{Pin: "GPIO17", ActiveLow: true})
			if err := r.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := r.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			if err := r.Pulse(t.Context(), 100*ms); !errors.Is(err, relay.ErrClosed) {
				t.Fatalf("Pulse after Close = %v, want ErrClosed", err)
			}
			assertWrites(t, pin.Writes(), write{0, high}, write{0, high})
		})
	})
	t.Run("mid-pulse", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			pin := newRecorder(t)
			r := newRelay(t, relay.PinOutput(pin), relay.Config{Pin: "GPIO17"})
			done := make(chan error, 1)
			go func() { done <- r.Pulse(t.Context(), time.Second) }()
			<-time.After(100 * ms)
			if err := r.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := <-done; !errors.Is(err, relay.ErrClosed) {
				t.Fatalf("Pulse = %v, want ErrClosed", err)
			}
			synctest.Wait() // nothing may write after Close
			assertWrites(t, pin.Writes(), write{0, low}, write{0, high}, write{100 * ms, low})
		})
	})
}

func TestRelay_OutputFails(t *testing.T) {
	broken := errors.New("line busy")
	t.Run("at construction", func(t *testing.T) {
		_, err := relay.New(fakeOutput{func(bool) error { return broken }}, relay.Config{Pin: "GPIO17"})
		if !errors.Is(err, broken) {
			t.Fatalf("New = %v, want %v", err, broken)
		}
	})
	t.Run("driving active", func(t *testing.T) {
		var writes []bool
		out := fakeOutput{func(high bool) error {
			writes = append(writes, high)
			if high {
				return broken
			}
			return nil
		}}
		r := newRelay(t, out, relay.Config{Pin: "GPIO17"})
		if err := r.Pulse(t.Context(), 100*ms); !errors.Is(err, broken) {
			t.Fatalf("Pulse = %v, want %v", err, broken)
		}
		// Initial inactive, the failed active, and the attempt to leave it inactive.
		if len(writes) != 3 || writes[2] {
			t.Fatalf("writes = %v, want [false true false]", writes)
		}
	})
	t.Run("driving inactive", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var fail bool
			r := newRelay(t, fakeOutput{func(high bool) error {
				if fail && !high {
					return broken
				}
				return nil
			}}, relay.Config{Pin: "GPIO17"})
			fail = true
			if err := r.Pulse(t.Context(), 100*ms); !errors.Is(err, broken) {
				t.Fatalf("Pulse = %v, want %v", err, broken)
			}
			if err := r.Close(); !errors.Is(err, broken) {
				t.Fatalf("Close = %v, want %v", err, broken)
			}
		})
	})
}

func TestRelay_PulseLengthOutOfRange(t *testing.T) {
	pin := newRecorder(t)
	r := newRelay(t, relay.PinOutput(pin), relay.Config{Pin: "GPIO17"})
	for _, d := range []time.Duration{-time.Millisecond, relay.MaxPulse + 1} {
		if err := r.Pulse(t.Context(), d); !errors.Is(err, relay.ErrPulseLength) {
			t.Errorf("Pulse(%v) = %v, want ErrPulseLength", d, err)
		}
	}
	if w := pin.Writes(); len(w) != 1 {
		t.Fatalf("writes = %v, want only the initial inactive one", w)
	}
}

func TestConfig_Validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  relay.Config
		ok   bool
	}{
		{"defaults", relay.Config{Pin: "GPIO17"}, true},
		{"max pulse", relay.Config{Pin: "GPIO17", Pulse: relay.MaxPulse}, true},
		{"no pin", relay.Config{}, false},
		{"negative pulse", relay.Config{Pin: "GPIO17", Pulse: -1}, false},
		{"pulse too long", relay.Config{Pin: "GPIO17", Pulse: relay.MaxPulse + 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// BenchmarkRelay_Pulse measures what a pulse costs beyond its length: the
// pulse is 1ns long, on an output that does nothing.
func BenchmarkRelay_Pulse(b *testing.B) {
	r := newRelay(b, fakeOutput{func(bool) error { return nil }}, relay.Config{Pin: "GPIO17"})
	ctx := b.Context()
	for b.Loop() {
		if err := r.Pulse(ctx, time.Nanosecond); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRelay_StartReturnsWithThePinActive: Start returns as soon as the pin
// is active, before the pulse ends, and finish ends it at its length.
func TestRelay_StartReturnsWithThePinActive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pin := newRecorder(t)
		r := newRelay(t, relay.PinOutput(pin), relay.Config{Pin: "GPIO17"})
		finish, err := r.Start(t.Context(), 300*ms)
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		if pin.Read() != high {
			t.Fatalf("pin reads %v when Start returns, want high", pin.Read())
		}
		assertWrites(t, pin.Writes(), write{0, low}, write{0, high})
		if err := finish(); err != nil {
			t.Fatalf("finish: %v", err)
		}
		assertWrites(t, pin.Writes(), write{0, low}, write{0, high}, write{300 * ms, low})
	})
}

// TestRelay_StartFailsWithoutFreeingThePassage: when the pin cannot be
// driven active, Start returns the error and no finish.
func TestRelay_StartFailsWithoutFreeingThePassage(t *testing.T) {
	broken := errors.New("line busy")
	r := newRelay(t, fakeOutput{func(high bool) error {
		if high {
			return broken
		}
		return nil
	}}, relay.Config{Pin: "GPIO17"})
	finish, err := r.Start(t.Context(), 100*ms)
	if !errors.Is(err, broken) || finish != nil {
		t.Fatalf("Start = %v, %v; want nil and %v", finish != nil, err, broken)
	}
}

// stuckOutput accepts every level and always reads high: a relay board
// whose line is shorted, or a pin some other process drives.
type stuckOutput struct{ writes []bool }

func (s *stuckOutput) Out(high bool) error    { s.writes = append(s.writes, high); return nil }
func (s *stuckOutput) Level() (high, ok bool) { return true, true }

// SelfTest drives the pin inactive, never active, and reads it back.
func TestRelay_SelfTest(t *testing.T) {
	sim := relay.NewSimulated("GPIO17", nil)
	r, err := relay.New(relay.PinOutput(sim), relay.Config{Pin: "GPIO17"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SelfTest(); err != nil {
		t.Fatalf("a simulated pin reads back what it was driven: %v", err)
	}
	for _, w := range sim.Writes() {
		if w.Level {
			t.Fatalf("the self-test drove the relay active: %v", sim.Writes())
		}
	}

	stuck := &stuckOutput{}
	r, err = relay.New(stuck, relay.Config{Pin: "GPIO18"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SelfTest(); !errors.Is(err, relay.ErrSelfTest) {
		t.Fatalf("a stuck pin: %v", err)
	}
	// Active-low: inactive is high, which the stuck pin reads.
	r, err = relay.New(stuck, relay.Config{Pin: "GPIO18", ActiveLow: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SelfTest(); err != nil {
		t.Fatal(err)
	}
	for _, high := range stuck.writes[2:] {
		if !high {
			t.Fatal("the active-low self-test drove the relay active")
		}
	}
	_ = r.Close()
	if err := r.SelfTest(); !errors.Is(err, relay.ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}
