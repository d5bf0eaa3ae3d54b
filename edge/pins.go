package edge

import (
	"log/slog"
	"sync"

	"periph.io/x/conn/v3/gpio"

	"github.com/svc-vms/svc/gate/relay"
)

// SimulatedPins is Deps.OpenPin for a machine without GPIO (svc-edge run
// --simulate): each name gets one relay.Simulated pin that logs every
// level written to it, so each pulse shows as two log lines.
func SimulatedPins(log *slog.Logger) func(name string) (gpio.PinIO, error) {
	var mu sync.Mutex
	pins := map[string]*relay.Simulated{}
	return func(name string) (gpio.PinIO, error) {
		mu.Lock()
		defer mu.Unlock()
		p, ok := pins[name]
		if !ok {
			p = relay.NewSimulated(name, log)
			pins[name] = p
		}
		return p, nil
	}
}
