package relay_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpiotest"

	"github.com/svc-vms/svc/gate/relay"
)

func newDoor(tb testing.TB, pin gpio.PinIn, cfg relay.DoorConfig) *relay.DoorSensor {
	tb.Helper()
	s, err := relay.NewDoorSensor(pin, cfg)
	if err != nil {
		tb.Fatalf("NewDoorSensor: %v", err)
	}
	return s
}

type change struct {
	open bool
	err  error
}

// waitChange runs s.WaitChange in a goroutine, which ends with ctx at the
// latest, and returns where its result arrives.
func waitChange(ctx context.Context, s *relay.DoorSensor) <-chan change {
	c := make(chan change, 1)
	go func() {
		open, err := s.WaitChange(ctx)
		c <- change{open, err}
	}()
	return c
}

// setLevel changes what a gpiotest pin reads, as the wire would, without
// an edge.
func setLevel(p *gpiotest.Pin, l gpio.Level) {
	p.Lock()
	p.L = l
	p.Unlock()
}

func TestDoorSensor_OpenReadsLevel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		activeLow bool
		level     gpio.Level
		open      bool
	}{
		{"high is open", false, high, true},
		{"low is shut", false, low, false},
		{"active low, low is open", true, low, true},
		{"active low, high is shut", true, high, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pin := &gpiotest.Pin{N: "GPIO27"}
			s := newDoor(t, pin, relay.DoorConfig{Pin: "GPIO27", ActiveLow: tc.activeLow})
			setLevel(pin, tc.level)
			open, err := s.Open()
			if err != nil || open != tc.open {
				t.Fatalf("Open = %v, %v; want %v, nil", open, err, tc.open)
			}
		})
	}
}

func TestDoorSensor_SetsPull(t *testing.T) {
	pin := &gpiotest.Pin{N: "GPIO27"}
	s := newDoor(t, pin, relay.DoorConfig{Pin: "GPIO27", Pull: "up"})
	if pin.Pull() != gpio.PullUp {
		t.Fatalf("pull = %v, want PullUp", pin.Pull())
	}
	// The pull-up alone holds the line high: an open door by default.
	if open, _ := s.Open(); !open {
		t.Fatal("Open = false on a pulled-up line")
	}
}

// With an EdgesChan the gpiotest pin accepts edge detection, and the only
// way its level changes here is an edge WaitForEdge receives: a sensor that
// polled instead would never take the edge.
func TestDoorSensor_WaitChangeOnEdges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pin := &gpiotest.Pin{N: "GPIO27", EdgesChan: make(chan gpio.Level)}
		s := newDoor(t, pin, relay.DoorConfig{Pin: "GPIO27", Poll: 50 * ms})

		for i, level := range []gpio.Level{high, low, high} {
			got := waitChange(t.Context(), s)
			<-time.After(time.Duration(i+1) * 70 * ms) // past a few edge-wait timeouts
			edgeAt := time.Now()
			select {
			case pin.EdgesChan <- level:
			case <-time.After(time.Minute): // fake time
				t.Fatalf("change %d: the sensor never waited for an edge", i)
			}
			if c := <-got; c.err != nil || c.open != bool(level) {
				t.Fatalf("change %d: WaitChange = %v, %v; want %v, nil", i, c.open, c.err, bool(level))
			}
			if lag := time.Since(edgeAt); lag != 0 {
				t.Fatalf("change %d reported %v after the edge, want at once", i, lag)
			}
		}
	})
}

// Without an EdgesChan the gpiotest pin refuses edge detection; the sensor
// polls on its ticker and sees the change at the next tick.
func TestDoorSensor_WaitChangePolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pin := &gpiotest.Pin{N: "GPIO27"}
		s := newDoor(t, pin, relay.DoorConfig{Pin: "GPIO27", ActiveLow: true, Pull: "up", Poll: 100 * ms})

		start := time.Now()
		got := waitChange(t.Context(), s)
		<-time.After(250 * ms)
		setLevel(pin, low) // active low: the door opens
		if c := <-got; c.err != nil || !c.open {
			t.Fatalf("WaitChange = %v, %v; want open", c.open, c.err)
		}
		if at := time.Since(start); at != 300*ms {
			t.Fatalf("change seen at %v, want at the third tick, 300ms", at)
		}
	})
}

// A change between two calls is not lost: WaitChange compares with what
// was last reported, not with the level when it was called.
func TestDoorSensor_WaitChangeSinceLastReport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pin := &gpiotest.Pin{N: "GPIO27"}
		s := newDoor(t, pin, relay.DoorConfig{Pin: "GPIO27"})
		setLevel(pin, high)
		start := time.Now()
		open, err := s.WaitChange(t.Context())
		if err != nil || !open {
			t.Fatalf("WaitChange = %v, %v; want true, nil", open, err)
		}
		if took := time.Since(start); took != 0 {
			t.Fatalf("WaitChange waited %v for a change already there", took)
		}
		// Nothing changes now, so the next wait runs into its deadline.
		ctx, cancel := context.WithTimeout(t.Context(), 300*ms)
		defer cancel()
		if _, err := s.WaitChange(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitChange with no change = %v, want deadline exceeded", err)
		}
	})
}

func TestDoorSensor_WaitChangeContextEnds(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edges bool
	}{
		{"edges", true},
		{"polling", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// Made inside the bubble: a channel from outside it would
				// keep fake time from advancing.
				pin := &gpiotest.Pin{N: "GPIO27"}
				if tc.edges {
					pin.EdgesChan = make(chan gpio.Level)
				}
				s := newDoor(t, pin, relay.DoorConfig{Pin: "GPIO27", Poll: 50 * ms})
				ctx, cancel := context.WithTimeout(t.Context(), 120*ms)
				defer cancel()
				start := time.Now()
				open, err := s.WaitChange(ctx)
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("WaitChange = %v, want deadline exceeded", err)
				}
				if open {
					t.Fatal("WaitChange reports open on an untouched low line")
				}
				// An edge wait cannot be interrupted: at most one Poll late.
				if took := time.Since(start); took < 120*ms || took > 170*ms {
					t.Fatalf("WaitChange returned after %v, want 120ms to 170ms", took)
				}
			})
		})
	}
}

func TestDoorConfig_Validate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  relay.DoorConfig
		ok   bool
	}{
		{"defaults", relay.DoorConfig{Pin: "GPIO27"}, true},
		{"all set", relay.DoorConfig{Pin: "GPIO27", ActiveLow: true, Pull: "down", Poll: time.Millisecond}, true},
		{"no pin", relay.DoorConfig{}, false},
		{"bad pull", relay.DoorConfig{Pin: "GPIO27", Pull: "sideways"}, false},
		{"negative poll", relay.DoorConfig{Pin: "GPIO27", Poll: -time.Second}, false},
		{"poll too short", relay.DoorConfig{Pin: "GPIO27", Poll: time.Microsecond}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
}
