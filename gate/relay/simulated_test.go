package relay_test

import (
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"periph.io/x/conn/v3/gpio"

	"github.com/svc-vms/svc/gate/relay"
	"github.com/svc-vms/svc/shared/lockedbuf"
)

func newLogger(buf *lockedbuf.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{} // keep lines comparable
			}
			return a
		},
	}))
}

func TestSimulated_LogsPulses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf lockedbuf.Buffer
		pin := relay.NewSimulated("GPIO17", newLogger(&buf))
		start := time.Now()
		r := newRelay(t, relay.PinOutput(pin), relay.Config{Pin: "GPIO17", ActiveLow: true})
		if err := r.Pulse(t.Context(), 400*ms); err != nil {
			t.Fatalf("Pulse: %v", err)
		}

		want := []relay.Write{{At: start, Level: high}, {At: start, Level: low}, {At: start.Add(400 * ms), Level: high}}
		got := pin.Writes()
		if len(got) != len(want) {
			t.Fatalf("Writes = %v, want %v", got, want)
		}
		for i := range want {
			if !got[i].At.Equal(want[i].At) || got[i].Level != want[i].Level {
				t.Fatalf("Writes = %v, want %v", got, want)
			}
		}

		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		wantLines := []string{
			`level=INFO msg="simulated pin out" pin=GPIO17 level=High`,
			`level=INFO msg="simulated pin out" pin=GPIO17 level=Low`,
			`level=INFO msg="simulated pin out" pin=GPIO17 level=High`,
		}
		if strings.Join(lines, "\n") != strings.Join(wantLines, "\n") {
			t.Fatalf("log:\n%s\nwant:\n%s", buf.String(), strings.Join(wantLines, "\n"))
		}
	})
}

// A simulated pin stands in for a door contact in `make run`: Set makes an
// edge the sensor wakes on at once, without polling.
func TestSimulated_DrivesDoorSensor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf lockedbuf.Buffer
		pin := relay.NewSimulated("GPIO27", newLogger(&buf))
		s := newDoor(t, pin, relay.DoorConfig{Pin: "GPIO27", ActiveLow: true, Pull: "up", Poll: time.Second})
		if open, _ := s.Open(); open {
			t.Fatal("door open on a pulled-up active-low line")
		}
		got := waitChange(t.Context(), s)
		<-time.After(300 * ms)
		setAt := time.Now()
		pin.Set(gpio.Low)
		if c := <-got; c.err != nil || !c.open {
			t.Fatalf("WaitChange = %v, %v; want open", c.open, c.err)
		}
		if lag := time.Since(setAt); lag != 0 {
			t.Fatalf("change seen %v after Set, want at once (an edge, not a poll)", lag)
		}
		if !strings.Contains(buf.String(), `msg="simulated pin input" pin=GPIO27 level=Low`) {
			t.Fatalf("log lacks the input change:\n%s", buf.String())
		}
	})
}

func TestSimulated_WaitForEdge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pin := relay.NewSimulated("GPIO27", slog.New(slog.DiscardHandler))
		if pin.WaitForEdge(time.Second) {
			t.Fatal("WaitForEdge = true without edge detection")
		}
		if err := pin.In(gpio.PullDown, gpio.RisingEdge); err != nil {
			t.Fatal(err)
		}
		pin.Set(gpio.High)
		if !pin.WaitForEdge(0) {
			t.Fatal("rising edge not reported")
		}
		pin.Set(gpio.Low) // falling: not asked for
		start := time.Now()
		if pin.WaitForEdge(200 * ms) {
			t.Fatal("falling edge reported for RisingEdge")
		}
		if took := time.Since(start); took != 200*ms {
			t.Fatalf("WaitForEdge timed out after %v, want 200ms", took)
		}
	})
}
