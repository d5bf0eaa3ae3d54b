package edge_test

import (
	"errors"
	"testing"

	"periph.io/x/conn/v3/gpio"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/gate/relay"
)

// On an appliance (no --simulate), a first configuration's placeholder
// pins open as simulated ones, so it starts and reaches the cloud for its
// real hardware; any other name is a GPIO line, which this test machine
// does not have.
func TestAppliancePins(t *testing.T) {
	open := edge.AppliancePins(sitetest.Logger(t, "pins"))
	p, err := open("SIM17")
	if err != nil {
		t.Fatalf("open the placeholder SIM17: %v", err)
	}
	if err := p.Out(gpio.High); err != nil {
		t.Fatalf("drive the placeholder: %v", err)
	}
	if again, _ := open("SIM17"); again != p {
		t.Fatal("a placeholder opened twice is two pins")
	}
	if _, err := open("GPIO17"); !errors.Is(err, relay.ErrNoPin) {
		t.Fatalf("GPIO17 on a machine without GPIO: %v, want relay.ErrNoPin", err)
	}
}
