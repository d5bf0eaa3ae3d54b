package relay_test

import (
	"errors"
	"testing"

	"periph.io/x/conn/v3/gpio/gpioreg"
	"periph.io/x/conn/v3/gpio/gpiotest"

	"github.com/svc-vms/svc/gate/relay"
)

// Open loads the host drivers for real; on a machine without GPIO they find
// nothing, which is not an error.
func TestOpen_ByName(t *testing.T) {
	want := &gpiotest.Pin{N: "SVC_RELAYTEST_1", Num: -1}
	if err := gpioreg.Register(want); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gpioreg.Unregister(want.N) })

	got, err := relay.Open("SVC_RELAYTEST_1")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if got != want {
		t.Fatalf("Open = %v, want the registered pin", got)
	}
}

func TestOpen_Unknown(t *testing.T) {
	if _, err := relay.Open("SVC_NO_SUCH_PIN"); !errors.Is(err, relay.ErrNoPin) {
		t.Fatalf("Open = %v, want ErrNoPin", err)
	}
}
