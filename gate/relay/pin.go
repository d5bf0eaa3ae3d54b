package relay

import (
	"fmt"

	"periph.io/x/conn/v3/gpio"
	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/host/v3"
)

// Open returns the GPIO line called name ("GPIO17", or a line name the board's
// device tree gives, as gpioinfo lists them), after loading periph's host
// drivers; on Linux they reach the lines through the GPIO character device
// (/dev/gpiochip*). Loading is done once per process, so Open may be called
// for every pin. It returns the drivers' error, or ErrNoPin when no line has
// the name (on a machine without GPIO, every name).
func Open(name string) (gpio.PinIO, error) {
	if _, err := host.Init(); err != nil {
		return nil, fmt.Errorf("open pin %s: load host drivers: %w", name, err)
	}
	p := gpioreg.ByName(name)
	if p == nil {
		return nil, fmt.Errorf("open pin %s: %w", name, ErrNoPin)
	}
	return p, nil
}
