package edge

import (
	"log/slog"
	"strings"
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

// PlaceholderPrefix starts the pin names of a first configuration's relays
// (config.Initial: SIM17, SIM18 ...): placeholders until the installer
// names the real GPIO lines, in the file or from the cloud.
const PlaceholderPrefix = "SIM"

// AppliancePins is the default Deps.OpenPin: GPIO lines by name
// (relay.Open), and the placeholder pins of a first configuration as
// simulated ones, with a warning. So an appliance enrolled a moment ago,
// whose configuration has no real pins yet, starts, connects and receives
// its hardware from the cloud rather than stop on a pin it cannot open;
// its gates decide and record as ever, and open no door until real
// relays are configured.
func AppliancePins(log *slog.Logger) func(name string) (gpio.PinIO, error) {
	simulated := SimulatedPins(log)
	return func(name string) (gpio.PinIO, error) {
		if !strings.HasPrefix(name, PlaceholderPrefix) {
			return relay.Open(name)
		}
		log.Warn("a placeholder relay pin is simulated: no door opens until the gate's real relay is configured (PATCH /v1/edges/{edge_id}, or the file)",
			"pin", name)
		return simulated(name)
	}
}
