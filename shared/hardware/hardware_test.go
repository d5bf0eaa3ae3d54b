package hardware_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/strictjson"
)

const (
	gate1 = "gate_01m7ym407qfqpbgybweqvx4fga"
	gate2 = "gate_01m7ym407qfqptfsbz8t3m6nw2"
)

const example = `{
  "gates": [
    {
      "gate_id": "` + gate1 + `",
      "readers": [
        {"kind": "serial", "device": "/dev/ttyACM0"},
        {"kind": "tcp", "listen": "0.0.0.0:9001"},
        {"kind": "camera"}
      ],
      "relay": {"pin": "GPIO17", "active_low": true},
      "door": {"pin": "GPIO27", "pull": "up"}
    },
    {
      "gate_id": "` + gate2 + `",
      "readers": [{"kind": "tcp", "listen": "127.0.0.1:9002"}],
      "relay": {"pin": "GPIO22", "pulse": "1s"},
      "door": null,
      "when_stale": "fail_open"
    }
  ],
  "kiosk": {"printer": "192.168.1.50:9100"}
}`

func TestParse_DefaultsFilledIn(t *testing.T) {
	doc, problems := hardware.Parse([]byte(example), nil)
	require.Empty(t, problems)
	require.Len(t, doc.Gates, 2)
	g := doc.Gates[0]
	require.Equal(t, gate1, g.ID)
	require.Equal(t, hardware.DefaultBaud, g.Readers[0].Baud)
	require.Equal(t, hardware.DefaultPulse, g.Relay.Pulse)
	require.Equal(t, hardware.DefaultPoll, g.Door.Poll)
	require.Equal(t, hardware.FailSecure, g.WhenStale, "a gate fails secure unless told otherwise")
	require.Nil(t, doc.Gates[1].Door)
	require.Equal(t, time.Second, doc.Gates[1].Relay.Pulse)
	require.Equal(t, &hardware.Kiosk{Label: hardware.DefaultLabel, Printer: "192.168.1.50:9100"}, doc.Kiosk)
}

// A document marshalled and read back is the same document, every value
// spelt out: what the cloud stores and the feed carries.
func TestDocument_RoundTrip(t *testing.T) {
	doc, problems := hardware.Parse([]byte(example), nil)
	require.Empty(t, problems)
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	require.Contains(t, string(b), `"pulse":"500ms"`)
	var back hardware.Document
	require.NoError(t, json.Unmarshal(b, &back))
	require.True(t, hardware.Equal(doc, back), "%s", b)
	require.Equal(t, doc, back)

	none, err := json.Marshal(hardware.Document{})
	require.NoError(t, err)
	require.JSONEq(t, `{"gates": []}`, string(none), "no gates is [], which Parse reads back")
	require.NoError(t, json.Unmarshal(none, &back))
	require.Empty(t, back.Gates)
}

func TestDocument_CloneSharesNothing(t *testing.T) {
	doc, _ := hardware.Parse([]byte(example), nil)
	c := doc.Clone()
	c.Gates[0].Readers[0].Device = "/dev/ttyUSB9"
	c.Gates[0].Door.Pin = "GPIO5"
	c.Kiosk.Label = "62"
	require.Equal(t, "/dev/ttyACM0", doc.Gates[0].Readers[0].Device)
	require.Equal(t, "GPIO27", doc.Gates[0].Door.Pin)
	require.Equal(t, hardware.DefaultLabel, doc.Kiosk.Label)
	require.False(t, hardware.Equal(doc, c))
}

// Every problem is reported at its path, in one pass.
func TestParse_Problems(t *testing.T) {
	for _, tc := range []struct {
		name, path, msg string
		doc             string
	}{
		{"not JSON", "", "not JSON", `{"gates": [`},
		{"not an object", "", "must be an object, not an array", `[]`},
		{"gates required", "gates", "is required", `{}`},
		{"gates null", "gates", "must be an array, not null", `{"gates": null}`},
		{"unknown field", "gates[0].relay.pulse_ms", "unknown field",
			`{"gates": [{"gate_id": "` + gate1 + `", "readers": [{"kind": "camera"}], "relay": {"pin": "P1", "pulse_ms": 5}}]}`},
		{"comment refused", "//", "unknown field", `{"//": "no comments here", "gates": []}`},
		{"gate id", "gates[0].gate_id", "is not an ID like gate_",
			`{"gates": [{"gate_id": "site_01m7ym407qfqn967a2vb4tyzgj", "readers": [{"kind": "camera"}], "relay": {"pin": "P1"}}]}`},
		{"gate twice", "gates[1].gate_id", "already the ID of gates[0]",
			`{"gates": [{"gate_id": "` + gate1 + `", "readers": [{"kind": "camera"}], "relay": {"pin": "P1"}},
			            {"gate_id": "` + gate1 + `", "readers": [{"kind": "camera"}], "relay": {"pin": "P2"}}]}`},
		{"no readers", "gates[0].readers", "at least one reader", `{"gates": [{"gate_id": "` + gate1 + `", "readers": [], "relay": {"pin": "P1"}}]}`},
		{"pin twice", "gates[0].door.pin", "pin P1 is already used at gates[0].relay.pin",
			`{"gates": [{"gate_id": "` + gate1 + `", "readers": [{"kind": "camera"}], "relay": {"pin": "P1"}, "door": {"pin": "P1"}}]}`},
		{"pulse too long", "gates[0].relay.pulse", "must be between 0",
			`{"gates": [{"gate_id": "` + gate1 + `", "readers": [{"kind": "camera"}], "relay": {"pin": "P1", "pulse": "61s"}}]}`},
		{"tcp twice", "gates[0].readers[1].listen", "clashes with gates[0].readers[0].listen",
			`{"gates": [{"gate_id": "` + gate1 + `", "readers": [{"kind": "tcp", "listen": ":9001"}, {"kind": "tcp", "listen": "127.0.0.1:9001"}], "relay": {"pin": "P1"}}]}`},
		{"kiosk label", "kiosk.label", "must be 62x100", `{"gates": [], "kiosk": {"label": "A4"}}`},
		{"kiosk printer", "kiosk.printer", "host:port", `{"gates": [], "kiosk": {"printer": ":9100"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := hardware.Parse([]byte(tc.doc), nil)
			requireProblem(t, problems, tc.path, tc.msg)
		})
	}
}

// A TCP reader may not take an address the appliance listens on itself.
func TestParse_Reserved(t *testing.T) {
	listen, err := hardware.ParseAddr("listen", "0.0.0.0:9002")
	require.NoError(t, err)
	_, problems := hardware.Parse([]byte(example), []hardware.Addr{listen})
	requireProblem(t, problems, "gates[1].readers[0].listen", "clashes with listen (0.0.0.0:9002)")
}

func TestParse_Bounds(t *testing.T) {
	var gates []string
	for range hardware.MaxGates + 1 {
		gates = append(gates, `{"gate_id": "`+gate1+`", "readers": [{"kind": "camera"}], "relay": {"pin": "P1"}}`)
	}
	_, problems := hardware.Parse([]byte(`{"gates": [`+strings.Join(gates, ",")+`]}`), nil)
	requireProblem(t, problems, "gates", "at most 100")
}

func TestRelayDoor_Validate(t *testing.T) {
	require.NoError(t, hardware.Relay{Pin: "GPIO17"}.Validate())
	require.ErrorContains(t, hardware.Relay{}.Validate(), "relay.pin: must name a GPIO line")
	require.ErrorContains(t, hardware.Relay{Pin: "GPIO17", Pulse: 2 * time.Minute}.Validate(), "relay GPIO17.pulse")
	require.NoError(t, hardware.Door{Pin: "GPIO27", Pull: "up"}.Validate())
	require.ErrorContains(t, hardware.Door{Pin: "GPIO27", Pull: "sideways"}.Validate(), `"sideways": want up, down, float or empty`)
}

func requireProblem(t *testing.T, problems []strictjson.Problem, path, msg string) {
	t.Helper()
	for _, p := range problems {
		if p.Path == path && strings.Contains(p.Msg, msg) {
			return
		}
	}
	t.Fatalf("no problem at %q containing %q in %v", path, msg, problems)
}

// FuzzParse feeds Parse arbitrary bytes, as the API and the feed may: it
// never panics, returns problems or a document that passes its own checks
// and reads back the same after marshalling.
func FuzzParse(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte(`{"gates": []}`))
	f.Add([]byte(`{"gates": [{"readers": [{"kind": "serial", "baud": 1e400}], "door": null}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, problems := hardware.Parse(data, nil)
		if len(problems) > 0 {
			return
		}
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("marshal a valid document: %v", err)
		}
		back, problems := hardware.Parse(b, nil)
		if len(problems) > 0 || !hardware.Equal(doc, back) {
			t.Fatalf("%s read back as %+v, %v", b, back, problems)
		}
	})
}
