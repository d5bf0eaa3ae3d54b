// Package relay drives what a gate has besides its reader: the relay that
// frees a turnstile for one passage, and the optional sensor that tells
// whether the gate's door stands open.
//
// A [Relay] pulses an [Output]; a [DoorSensor] watches a periph input pin.
// Pins come from [Open] (a named GPIO line on the appliance, through the
// periph.io host drivers and the Linux GPIO character device) or from
// [Simulated] (a pin that logs every write, for `make run` on a machine
// without GPIO). Tests use periph.io/x/conn/v3/gpio/gpiotest pins.
//
// The methods a gate calls, [Relay.Pulse], [DoorSensor.Open] and
// [DoorSensor.WaitChange], take and return only standard types, so the
// gate's decision code declares its own small interfaces and never imports
// periph; the appliance's main resolves pins and wires them in.
//
// Its Config and DoorConfig are shared/hardware's relay and door, the
// document the appliance's gates are configured with, so their rules are
// written once.
//
// It may import periph.io/x/conn/v3, periph.io/x/host/v3, the standard
// library and shared/hardware.
package relay
