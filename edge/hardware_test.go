package edge_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"periph.io/x/conn/v3/gpio"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/gate/relay"
	"github.com/svc-vms/svc/kiosk"
	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// hardwareDoc is the cloud's hardware for the site's two gates: a TCP
// reader each at the addresses given, the relays the file has.
func (s *site) hardwareDoc(entry, exit string) *hardware.Document {
	doc := &hardware.Document{Gates: []hardware.Gate{
		{ID: s.entry, Readers: []hardware.Reader{{Kind: hardware.TCP, Listen: entry}, {Kind: hardware.Camera}},
			Relay: hardware.Relay{Pin: "GPIO17", Pulse: time.Millisecond}, WhenStale: hardware.FailSecure},
		{ID: s.exit, Readers: []hardware.Reader{{Kind: hardware.TCP, Listen: exit}},
			Relay: hardware.Relay{Pin: "GPIO22", Pulse: time.Millisecond}, WhenStale: hardware.FailOpen},
	}}
	doc.Defaults()
	return doc
}

// sendHardware is the cloud's hardware for this edge arriving on the
// feed: applied to the App's cache as the sync half applies it (nil
// clears it).
func (s *site) sendHardware(doc *hardware.Document) {
	s.t.Helper()
	c := s.cache.Load()
	_, err := c.Apply([]protocol.Change{{Seq: c.View().Seq() + 1, At: t0,
		Hardware: &protocol.EdgeHardware{EdgeID: s.cfg.EdgeID, Hardware: doc}}})
	require.NoError(s.t, err)
}

// readerAddr is the gate's first TCP reader's address as the App listens.
func (s *site) readerAddr(gateID string) string {
	addrs := s.app.Listening().Readers[gateID]
	if len(addrs) == 0 {
		return ""
	}
	return addrs[0].String()
}

// scanAt sends a token line to a TCP reader.
func scanAt(t *testing.T, addr, token string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "%s\r\n", token)
	require.NoError(t, err)
}

func (s *site) status() edge.StatusResponse {
	s.t.Helper()
	resp, body := s.get("/status")
	require.Equal(s.t, http.StatusOK, resp.StatusCode, body)
	var st edge.StatusResponse
	require.NoError(s.t, json.Unmarshal([]byte(body), &st))
	return st
}

func (s *site) checkedIn(v protocol.Visit) bool {
	got, ok := s.cache.Load().View().Visit(v.ID)
	return ok && got.Status == string(passrule.CheckedIn)
}

// lastLevel is the pin's last level written.
func (s *site) lastLevel(name string) gpio.Level {
	w := s.pin(name).Writes()
	require.NotEmpty(s.t, w)
	return w[len(w)-1].Level
}

// holder holds the next active write of a pin until released: a pulse
// under way, for as long as the test wants.
type holder struct {
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
}

type heldPin struct {
	*relay.Simulated
	h *holder
}

func (p heldPin) Out(l gpio.Level) error {
	if l == gpio.High && p.h.armed.CompareAndSwap(true, false) {
		p.h.held <- struct{}{}
		<-p.h.release
	}
	return p.Simulated.Out(l)
}

// A hardware change from the cloud swaps the readers while the App runs:
// a scan under way when it arrives completes on the old gates (its pulse
// whole), one that comes meanwhile waits and is decided, the old port is
// closed, the new one takes scans, and no relay is left energised.
func TestApp_HardwareChangeSwapsReaders(t *testing.T) {
	s := newSite(t)
	h := &holder{held: make(chan struct{}, 1), release: make(chan struct{})}
	s.wrapPin = func(name string, p *relay.Simulated) gpio.PinIO {
		if name == "GPIO17" {
			return heldPin{Simulated: p, h: h}
		}
		return p
	}
	s.start()
	require.Equal(t, edge.SourceConfig, s.status().Hardware.Source)
	old := s.readerAddr(s.entry)
	require.NotEmpty(t, old)

	h.armed.Store(true)
	scanAt(t, old, s.token(s.visits[0]))
	select {
	case <-h.held: // the scan's pulse is under way, on the old relay
	case <-time.After(5 * time.Second):
		t.Fatal("the scan did not reach the relay")
	}
	entry, exit := freeAddr(t), freeAddr(t)
	s.sendHardware(s.hardwareDoc(entry, exit))
	during := make(chan edge.ScanResponse, 1)
	go func() {
		resp, err := s.srv.Client().Post(s.srv.URL+"/gates/"+s.entry+"/scan", "text/plain", strings.NewReader(s.token(s.visits[1])))
		if err != nil {
			during <- edge.ScanResponse{Error: err.Error()}
			return
		}
		defer resp.Body.Close()
		var out edge.ScanResponse
		_ = json.NewDecoder(resp.Body).Decode(&out)
		during <- out
	}()
	close(h.release)

	eventually(t, func() bool { return s.readerAddr(s.entry) == entry }, "the entry gate's reader did not move to "+entry)
	require.Equal(t, exit, s.readerAddr(s.exit))
	require.True(t, s.checkedIn(s.visits[0]), "the scan under way was decided")
	select {
	case res := <-during:
		require.True(t, res.Admitted, "the scan during the change: %+v", res)
		require.Equal(t, "check_in", res.Kind)
	case <-time.After(5 * time.Second):
		t.Fatal("the scan during the change never answered")
	}
	require.Equal(t, gpio.Low, s.lastLevel("GPIO17"), "the entry relay is not left energised")
	require.Equal(t, gpio.Low, s.lastLevel("GPIO22"))
	_, err := net.DialTimeout("tcp", old, time.Second)
	require.Error(t, err, "the old port is closed")

	before := s.pulses("GPIO17")
	scanAt(t, entry, s.token(s.visits[2]))
	eventually(t, func() bool { return s.checkedIn(s.visits[2]) }, "a scan on the new port was not decided")
	eventually(t, func() bool { return s.pulses("GPIO17") == before+1 }, "a scan on the new port did not open the gate")

	st := s.status()
	require.Equal(t, edge.SourceCloud, st.Hardware.Source)
	require.Empty(t, st.Hardware.Error)
	require.Len(t, st.Gates, 2)
	require.Equal(t, []string{"tcp " + entry, "camera"}, st.Gates[0].Readers)
	require.Nil(t, st.Gates[0].DoorOpen, "the cloud's entry gate has no door sensor")
}

// A hardware document that does not open (a port in use, a serial device
// missing) leaves the previous hardware running, and says why in /status
// and to the cloud; the next good one applies and clears it.
func TestApp_HardwareThatFailsKeepsThePrevious(t *testing.T) {
	s := newSite(t).start()
	old := s.readerAddr(s.entry)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()

	i := 0
	for name, doc := range map[string]*hardware.Document{
		"port in use": s.hardwareDoc(busy.Addr().String(), freeAddr(t)),
		"serial device missing": func() *hardware.Document {
			d := s.hardwareDoc(freeAddr(t), freeAddr(t))
			d.Gates[1].Readers = append(d.Gates[1].Readers, hardware.Reader{Kind: hardware.Serial, Device: "/dev/svc-no-such-reader", Baud: 9600})
			return d
		}(),
	} {
		s.sendHardware(doc)
		eventually(t, func() bool { return s.app.HardwareError() != "" }, name+": no error reported")
		require.Equal(t, old, s.readerAddr(s.entry), name+": the previous reader goes on")
		st := s.status()
		require.Equal(t, edge.SourceConfig, st.Hardware.Source, name)
		require.NotEmpty(t, st.Hardware.Error, name)
		require.NotNil(t, st.Hardware.ErrorAt, name)
		before := s.pulses("GPIO17")
		scanAt(t, old, s.token(s.visits[i])) // a visit of its own: each checks in
		i++
		eventually(t, func() bool { return s.pulses("GPIO17") > before }, name+": the previous reader does not take scans")
		s.sendHardware(nil) // back to the file's: what runs; the error goes
		eventually(t, func() bool { return s.app.HardwareError() == "" }, name+": the error stayed")
	}
	require.Contains(t, s.logs.String(), "address already in use")
	require.Contains(t, s.logs.String(), "/dev/svc-no-such-reader")

	entry := freeAddr(t)
	s.sendHardware(s.hardwareDoc(entry, freeAddr(t)))
	eventually(t, func() bool { return s.readerAddr(s.entry) == entry }, "the good document did not apply")
	require.Empty(t, s.app.HardwareError())
	require.Equal(t, edge.SourceCloud, s.status().Hardware.Source)
}

// The cloud's hardware in the cache wins over the file's from the start
// (a restart), and clearing it goes back to the file's gates.
func TestApp_HardwareFromTheCacheAtStart(t *testing.T) {
	s := newSite(t, withoutSync())
	require.NoError(t, mkdirFor(s.cfg.CachePath))
	c, err := cache.Open(s.cfg.CachePath, cache.Options{EdgeID: s.cfg.EdgeID})
	require.NoError(t, err)
	require.NoError(t, s.fill(c))
	entry := freeAddr(t)
	_, err = c.Apply([]protocol.Change{{Seq: 8, At: t0, Hardware: &protocol.EdgeHardware{EdgeID: s.cfg.EdgeID, Hardware: s.hardwareDoc(entry, freeAddr(t))}}})
	require.NoError(t, err)
	require.NoError(t, c.Close())

	s.start()
	require.Equal(t, entry, s.readerAddr(s.entry), "the cloud's reader from the start")
	require.Equal(t, edge.SourceCloud, s.status().Hardware.Source)
	scanAt(t, entry, s.token(s.visits[0]))
	eventually(t, func() bool { return s.checkedIn(s.visits[0]) }, "the cloud's reader does not take scans")

	s.sendHardware(nil)
	eventually(t, func() bool { a := s.readerAddr(s.entry); return a != "" && a != entry }, "the file's reader did not come back")
	require.Equal(t, edge.SourceConfig, s.status().Hardware.Source)
	_, err = net.DialTimeout("tcp", entry, time.Second)
	require.Error(t, err, "the cloud's port is closed")
}

// An appliance whose file has no gates runs (its kiosk and sync would) and
// drives the gates the cloud sends.
func TestApp_NoGatesUntilTheCloudSends(t *testing.T) {
	s := newSite(t)
	s.cfg.Gates = nil
	s.start()
	require.Empty(t, s.status().Gates)
	resp, _ := s.post("/gates/"+s.entry+"/scan", "text/plain", strings.NewReader(s.token(s.visits[0])))
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, s.logs.String(), "no gates")

	entry := freeAddr(t)
	s.sendHardware(s.hardwareDoc(entry, freeAddr(t)))
	eventually(t, func() bool { return s.readerAddr(s.entry) == entry }, "the cloud's gates did not come")
	scanAt(t, entry, s.token(s.visits[0]))
	eventually(t, func() bool { return s.checkedIn(s.visits[0]) }, "the cloud's gate does not take scans")
	require.Len(t, s.status().Gates, 2)
}

// The cloud's kiosk printing reaches the kiosk while it serves: a device
// paired from then on prints on the cloud's printer, and the file's comes
// back when the cloud clears its hardware.
func TestApp_HardwareKioskPrinting(t *testing.T) {
	s := newSite(t)
	s.cfg.Kiosk = &config.Kiosk{Listen: "127.0.0.1:0", Languages: []string{"en"}, Label: "62x100", Printer: "10.0.0.1:9100"}
	s.start()
	code, err := s.app.NewPairingCode("Lobby", kiosk.ModeVisitor)
	require.NoError(t, err)
	require.Equal(t, "10.0.0.1:9100", code.Printer, "the file's printer")

	doc := s.hardwareDoc(freeAddr(t), freeAddr(t))
	doc.Kiosk = &hardware.Kiosk{Label: "62", Printer: "10.0.0.9:9100"}
	s.sendHardware(doc)
	eventually(t, func() bool {
		code, err := s.app.NewPairingCode("Desk", kiosk.ModeReception)
		return err == nil && code.Printer == "10.0.0.9:9100"
	}, "the cloud's printer did not reach the kiosk")

	s.sendHardware(nil)
	eventually(t, func() bool {
		code, err := s.app.NewPairingCode("Desk", kiosk.ModeReception)
		return err == nil && code.Printer == "10.0.0.1:9100"
	}, "the file's printer did not come back")
}
