package kiosk

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skip2/go-qrcode"

	"github.com/svc-vms/svc/gate/qrdecode"
	"github.com/svc-vms/svc/kiosk/printer"
)

// withPrinter gives the harness a print queue and a simulated Brother QL
// on a free port, and pairs the harness's client to print on it.
func (h *harness) withPrinter(t *testing.T) *printer.Simulator {
	t.Helper()
	sim := h.withQueue(t)
	code, err := h.devs.NewCode("Lobby", ModeVisitor, sim.Addr(), h.now)
	if err != nil {
		t.Fatal(err)
	}
	if res := h.post(h.client, "/pair", url.Values{"code": {code.Code}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("pair: %d", res.StatusCode)
	}
	return sim
}

// withQueue gives the harness a print queue and a simulated Brother QL on
// a free port, loaded with the kiosk's label.
func (h *harness) withQueue(t *testing.T) *printer.Simulator {
	t.Helper()
	sim, err := printer.ListenSimulator("127.0.0.1:0", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	q, err := printer.OpenQueue(filepath.Join(t.TempDir(), "jobs"), printer.QueueOptions{Now: func() time.Time { return h.now }})
	if err != nil {
		t.Fatal(err)
	}
	h.srv.cfg.Printer = q
	sim.Load(printer.MediaOf(h.srv.label()))
	return sim
}

func (h *harness) walkIn(t *testing.T, name string) string {
	t.Helper()
	id := "visit_01jdq7n4ybfzrt6k5m8c1qx2va"
	if len(h.store.walkIns) > 0 {
		id = "visit_01jdq7n4ybfzrt6k5m8c1qx2vb"
	}
	res := h.post(h.client, "/walk-in", url.Values{"to": {"desk"}, "type": {"meeting"}, "visit_id": {id}, "name": {name}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("walk-in: %d %s", res.StatusCode, body(t, res))
	}
	return id
}

func TestKiosk_BadgeQRIsThePass(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	id := h.walkIn(t, "Ada Lovelace")
	res := h.get(h.client, "/visits/"+id+"/badge.png")
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("badge: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	png, _ := io.ReadAll(res.Body)
	res.Body.Close()
	got, err := qrdecode.DecodeBytes(png)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := h.store.Visit(id)
	if got != v.Pass {
		t.Errorf("badge QR = %q, want the pass %q", got, v.Pass)
	}
}

func TestKiosk_PrintOnceAndRetryAfterOutOfLabels(t *testing.T) {
	h := newHarness(t)
	sim := h.withPrinter(t)
	id := h.walkIn(t, "Ada Lovelace")

	sim.SetFault(printer.FaultNoMedia)
	res := h.post(h.client, "/visits/"+id+"/print", nil)
	b := body(t, res)
	if res.StatusCode != http.StatusBadGateway || !strings.Contains(b, "out of labels") {
		t.Fatalf("out of labels: %d, plain words shown: %v", res.StatusCode, strings.Contains(b, "out of labels"))
	}
	if n := len(sim.Printed()); n != 0 {
		t.Fatalf("%d labels printed with no labels loaded", n)
	}

	sim.SetFault(printer.FaultNone)
	res = h.post(h.client, "/visits/"+id+"/print", nil) // the same job again, now that labels are in
	if b := body(t, res); res.StatusCode != http.StatusOK || !strings.Contains(b, "Your badge is printed") {
		t.Fatalf("print after loading labels: %d %s", res.StatusCode, b[strings.Index(b, "<main"):])
	}
	h.post(h.client, "/visits/"+id+"/print", nil) // a second tap
	if n := len(sim.Printed()); n != 1 {
		t.Errorf("%d labels printed, want 1", n)
	}
	got, err := qrdecode.Decode(sim.Printed()[0].Image)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := h.store.Visit(id); got != v.Pass {
		t.Errorf("printed QR = %q, want %q", got, v.Pass)
	}
}

// A tablet's camera photo of a pass is decoded on the appliance and checks
// the visitor in as a scanned pass would.
func TestKiosk_CheckInByCameraPhoto(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	var got string
	h.store.checkIn = func(in CheckIn) (Visit, error) {
		got = in.Token
		return Visit{}, &RefusedError{Reason: "expired"}
	}
	png, err := qrcode.Encode("P1:PHOTOGRAPHED-PASS", qrcode.Medium, 400)
	if err != nil {
		t.Fatal(err)
	}
	send := func(data []byte) *http.Response {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		fw, _ := mw.CreateFormFile("photo", "pass.png")
		fw.Write(data)
		mw.Close()
		res, err := h.client.Post(h.ts.URL+"/check-in", mw.FormDataContentType(), &b)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	b := body(t, send(png))
	if got != "P1:PHOTOGRAPHED-PASS" {
		t.Errorf("token from the photo = %q", got)
	}
	if !strings.Contains(b, "This pass has expired.") {
		t.Errorf("the refusal is not in plain words")
	}
	got = ""
	b = body(t, send([]byte("not an image")))
	if got != "" || !strings.Contains(b, "We could not read a pass in that photo") {
		t.Errorf("an unreadable photo: token %q", got)
	}
}

// Reception reprints a badge already printed; a visitor tablet's second
// tap prints nothing more.
func TestKiosk_ReceptionReprints(t *testing.T) {
	h := newHarness(t)
	sim := h.withPrinter(t)
	id := h.walkIn(t, "Ada Lovelace")
	h.post(h.client, "/visits/"+id+"/print", nil)
	h.post(h.client, "/visits/"+id+"/print", url.Values{"reprint": {"1"}}) // not reception: ignored
	if n := len(sim.Printed()); n != 1 {
		t.Fatalf("%d labels after the visitor's taps, want 1", n)
	}
	desk := h.newClient()
	code, _ := h.devs.NewCode("Desk", ModeReception, sim.Addr(), h.now)
	h.post(desk, "/pair", url.Values{"code": {code.Code}})
	page := body(t, h.get(desk, "/visits/"+id+"/done"))
	if !strings.Contains(page, "Print the badge again") {
		t.Fatalf("reception is not offered a reprint")
	}
	h.now = h.now.Add(time.Minute)
	if res := h.post(desk, "/visits/"+id+"/print", url.Values{"reprint": {"1"}}); res.StatusCode != http.StatusOK {
		t.Fatalf("reprint: %d", res.StatusCode)
	}
	if n := len(sim.Printed()); n != 2 {
		t.Errorf("%d labels after a reprint, want 2", n)
	}
}

// SetPrinting changes the printer of a device paired without one and the
// label, while the kiosk serves: the next badge prints there, for that
// label. A label that is no badge label changes nothing.
func TestKiosk_SetPrintingWhileServing(t *testing.T) {
	h := newHarness(t)
	sim := h.withQueue(t)
	h.pair(h.client, ModeVisitor) // without a printer
	id := h.walkIn(t, "Ada Lovelace")
	if res := h.post(h.client, "/visits/"+id+"/print", nil); res.StatusCode == http.StatusOK {
		t.Fatalf("a device without a printer printed: %d", res.StatusCode)
	}
	if err := h.srv.SetPrinting("A4", sim.Addr()); err == nil {
		t.Fatal("SetPrinting took a label that is no badge label")
	}
	if got := h.srv.defaultPrinter(); got != "" {
		t.Fatalf("a refused SetPrinting changed the printer to %q", got)
	}
	if err := h.srv.SetPrinting("62", sim.Addr()); err != nil {
		t.Fatal(err)
	}
	sim.Load(printer.MediaOf(h.srv.label()))
	if res := h.post(h.client, "/visits/"+id+"/print", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("print on the kiosk's printer: %d %s", res.StatusCode, body(t, res))
	}
	printed := sim.Printed()
	if len(printed) != 1 {
		t.Fatalf("%d labels printed, want 1", len(printed))
	}
	if l := h.srv.label(); l.Name != "62" {
		t.Errorf("label %q, want 62", l.Name)
	}
}
