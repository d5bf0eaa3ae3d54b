package edge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/svc-vms/svc/gate"
	"github.com/svc-vms/svc/gate/reader"
	"github.com/svc-vms/svc/gate/relay"
	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/strictjson"
)

// This file is the App's hardware (docs/decisions.md, "Hardware from the
// cloud (issue 17)"): the gates it drives, with their relays, door sensors
// and readers, as a hardware document says them. The document is the
// cloud's when the cache holds one for this edge, else the configuration
// file's; when it changes the App changes its hardware while it runs.

// Sources of the hardware driven.
const (
	SourceConfig = "config" // the configuration file's gates
	SourceCloud  = "cloud"  // the document the cloud sent (PATCH /v1/edges/{edge_id})
)

// hwSet is the gates one hardware document opened, with their relays and
// door sensors: what a swap replaces whole. Readers outlive it when the
// next document keeps them (site.readers).
type hwSet struct {
	doc     hardware.Document
	source  string
	gates   map[string]*gate.Gate
	relays  []*relay.Relay
	doors   map[string]*relay.DoorSensor
	cameras map[string]bool

	// stopDoors ends the door sensors' watchers and waits for them; nil
	// until they run.
	stopDoors func()
}

// runningReader is a reader serving scans, the same across documents that
// keep it.
type runningReader struct {
	key    string
	gateID string
	rc     hardware.Reader
	tcp    *reader.TCP
	serial *reader.Serial
	cancel context.CancelFunc
	done   chan struct{} // closed when its Run returned
}

// readerKey is what makes a reader the same across two documents: its
// gate, its kind and where it reads.
func readerKey(gateID string, r hardware.Reader) string {
	switch r.Kind {
	case hardware.TCP:
		return gateID + " tcp " + r.Listen
	case hardware.Serial:
		return gateID + " serial " + r.Device + " " + strconv.Itoa(r.Baud)
	}
	return ""
}

// HardwareStatus is what the App drives and whether the cloud's hardware
// could be, for GET /status.
type HardwareStatus struct {
	// Source is SourceCloud or SourceConfig.
	Source string `json:"source"`
	// Error says why the cloud's last hardware is not driven (what was
	// driven before still is); empty when nothing went wrong.
	Error   string     `json:"error,omitempty"`
	ErrorAt *time.Time `json:"error_at,omitempty"`
}

// hwState is the hardware's state as the App reports it.
type hwState struct {
	source string
	err    error
	at     time.Time
	tried  *hardware.Document // the document that failed, not tried again until it changes
}

// wanted is the hardware the App should drive: the cloud's document for
// this edge when the cache holds one, else the file's; the cloud's kiosk
// printing, when it says any, else the file's.
func (a *App) wanted(s *site) (hardware.Document, string) {
	file := a.cfg.Hardware()
	doc, ok := s.cache.View().Hardware()
	if !ok {
		return file, SourceConfig
	}
	if doc.Kiosk == nil {
		doc.Kiosk = file.Kiosk
	}
	return doc, SourceCloud
}

// openSet opens the relays, door sensors and gates of doc. On failure it
// closes what it opened and names the gate that failed.
func (a *App) openSet(s *site, doc hardware.Document, source string) (set *hwSet, err error) {
	set = &hwSet{doc: doc, source: source, gates: map[string]*gate.Gate{}, doors: map[string]*relay.DoorSensor{}, cameras: map[string]bool{}}
	defer func() {
		if err != nil {
			a.closeSet(set)
		}
	}()
	for _, gc := range doc.Gates {
		pin, err := a.d.OpenPin(gc.Relay.Pin)
		if err != nil {
			return set, fmt.Errorf("gate %s relay: %w", gc.ID, err)
		}
		r, err := relay.New(relay.PinOutput(pin), gc.Relay)
		if err != nil {
			return set, fmt.Errorf("gate %s: %w", gc.ID, err)
		}
		set.relays = append(set.relays, r)
		g, err := gate.New(gate.Config{ID: gc.ID, SiteID: a.cfg.Site.SiteID, FailOpen: gc.WhenStale == hardware.FailOpen,
			Relay: r, Store: s.st, Passes: s.passes, Logger: a.log})
		if err != nil {
			return set, fmt.Errorf("gate %s: %w", gc.ID, err)
		}
		set.gates[gc.ID] = g
		if gc.Door != nil {
			pin, err := a.d.OpenPin(gc.Door.Pin)
			if err != nil {
				return set, fmt.Errorf("gate %s door: %w", gc.ID, err)
			}
			if set.doors[gc.ID], err = relay.NewDoorSensor(pin, *gc.Door); err != nil {
				return set, fmt.Errorf("gate %s: %w", gc.ID, err)
			}
		}
		for _, rc := range gc.Readers {
			switch rc.Kind {
			case hardware.Camera:
				set.cameras[gc.ID] = true
			case hardware.TCP, hardware.Serial:
			default:
				return set, fmt.Errorf("gate %s: reader kind %q", gc.ID, rc.Kind)
			}
		}
	}
	return set, nil
}

// startDoors runs the set's door watchers until stopDoors.
func (a *App) startDoors(ctx context.Context, set *hwSet) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for id, d := range set.doors {
		wg.Go(func() { _ = a.watchDoor(ctx, id, d) })
	}
	set.stopDoors = func() { cancel(); wg.Wait() }
}

// closeSet releases the set: its door watchers stop, and its relays are
// driven inactive and closed, so none is left energised. The caller holds
// no scan under way on it (site.hwMu).
func (a *App) closeSet(set *hwSet) {
	if set == nil {
		return
	}
	if set.stopDoors != nil {
		set.stopDoors()
		set.stopDoors = nil
	}
	for id := range set.doors {
		a.m.forgetDoor(id)
	}
	for _, r := range set.relays {
		if err := r.Close(); err != nil {
			a.log.Error("relay not closed", "error", err.Error())
		}
	}
}

// openReader makes the reader rc of gate gateID: a TCP reader listens now,
// so that a port in use fails here. strict also refuses a serial reader
// whose device is not there (a document from the cloud naming a device
// the appliance lacks); otherwise a serial reader waits for its device.
func (a *App) openReader(s *site, gateID string, rc hardware.Reader, strict bool) (*runningReader, error) {
	opts := reader.Options{GateID: gateID, Logger: a.log, Now: a.d.Now, Deliver: s.debounced}
	r := &runningReader{key: readerKey(gateID, rc), gateID: gateID, rc: rc, done: make(chan struct{})}
	switch rc.Kind {
	case hardware.TCP:
		t, err := reader.ListenTCP(rc.Listen, opts)
		if err != nil {
			return nil, fmt.Errorf("gate %s: %w", gateID, err)
		}
		r.tcp = t
	case hardware.Serial:
		if strict {
			if _, err := os.Stat(rc.Device); err != nil {
				return nil, fmt.Errorf("gate %s: serial reader: %w", gateID, err)
			}
		}
		sr, err := reader.NewSerial(rc.Device, rc.Baud, opts)
		if err != nil {
			return nil, fmt.Errorf("gate %s: %w", gateID, err)
		}
		r.serial = sr
	default:
		return nil, fmt.Errorf("gate %s: reader kind %q", gateID, rc.Kind)
	}
	return r, nil
}

// startReader runs r until it is stopped, under the site's readers'
// wait group; a reader whose Run fails on its own reports to s.failed.
func (a *App) startReader(ctx context.Context, s *site, r *runningReader) {
	ctx, r.cancel = context.WithCancel(ctx)
	s.readerWG.Go(func() {
		defer close(r.done)
		var err error
		if r.tcp != nil {
			err = r.tcp.Run(ctx)
		} else {
			err = r.serial.Run(ctx)
		}
		if err != nil && ctx.Err() == nil {
			select {
			case s.failed <- fmt.Errorf("edge: reader %s: %w", r.key, err):
			default:
			}
		}
	})
}

// stopReader makes r stop taking scans: its listener is closed at once
// (its port is free on return), its connections as its Run ends. It does
// not wait for Run, whose scans under way may be waiting for site.hwMu.
func (r *runningReader) stop() {
	if r.cancel != nil {
		r.cancel() // first: Run then takes the listener's closing for a stop, not a failure
	}
	if r.tcp != nil {
		_ = r.tcp.Close()
	}
}

// readers lists doc's readers that read scans (TCP, serial) by key.
func readers(doc hardware.Document) map[string]struct {
	gateID string
	rc     hardware.Reader
} {
	out := map[string]struct {
		gateID string
		rc     hardware.Reader
	}{}
	for _, g := range doc.Gates {
		for _, rc := range g.Readers {
			if k := readerKey(g.ID, rc); k != "" {
				out[k] = struct {
					gateID string
					rc     hardware.Reader
				}{g.ID, rc}
			}
		}
	}
	return out
}

// openHardware opens doc's gates and readers at the start, before Run
// serves: none runs yet.
func (a *App) openHardware(s *site, doc hardware.Document, source string) error {
	set, err := a.openSet(s, doc, source)
	if err != nil {
		return err
	}
	opened := map[string]*runningReader{}
	for k, r := range readers(doc) {
		rr, err := a.openReader(s, r.gateID, r.rc, false)
		if err != nil {
			for _, o := range opened {
				o.stop()
			}
			a.closeSet(set)
			return err
		}
		opened[k] = rr
	}
	s.hw, s.readers = set, opened
	return nil
}

// swap makes the App drive doc instead of what it drives, while it runs.
// Scans take site.hwMu for reading, so one under way completes on the old
// gates before anything changes, and one that arrives meanwhile waits and
// then decides on the new gates; no relay is open across the change (the
// old ones are driven inactive and closed first). Readers that doc keeps
// go on reading, untouched; those it drops stop; those it adds start, on
// ports and devices the dropped ones free first. When doc fails to open
// (a pin or device missing, a port in use) the App goes on with what it
// drove, and swap returns the error.
func (a *App) swap(ctx context.Context, s *site, doc hardware.Document, source string) error {
	s.hwMu.Lock()
	defer s.hwMu.Unlock()
	defer a.publishReaders(s)
	want := readers(doc)
	var dropped, freeing []*runningReader
	for k, r := range s.readers {
		if _, keep := want[k]; keep {
			continue
		}
		dropped = append(dropped, r)
		for _, w := range want {
			if _, running := s.readers[readerKey(w.gateID, w.rc)]; !running && holds(r.rc, w.rc) {
				freeing = append(freeing, r)
				break
			}
		}
	}
	// The dropped readers holding what an added one needs stop first;
	// should the rest fail, they start again.
	for _, r := range freeing {
		r.stop()
		delete(s.readers, r.key)
	}
	restore := func() {
		for _, r := range freeing {
			rr, err := a.openReader(s, r.gateID, r.rc, false)
			if err != nil {
				a.log.Error("hardware: a previous reader did not open again", "reader", r.key, "error", err.Error())
				continue
			}
			a.startReader(ctx, s, rr)
			s.readers[rr.key] = rr
		}
	}
	var added []*runningReader
	undo := func() {
		for _, r := range added {
			r.stop()
			delete(s.readers, r.key)
		}
		restore()
	}
	for k, w := range want {
		if _, ok := s.readers[k]; ok {
			continue
		}
		rr, err := a.openReader(s, w.gateID, w.rc, true)
		if err != nil {
			undo()
			return err
		}
		a.startReader(ctx, s, rr)
		s.readers[k] = rr
		added = append(added, rr)
	}
	// The gates: the old relays are released before the new ones take
	// their pins, and come back should the new ones fail.
	old := s.hw
	a.closeSet(old)
	set, err := a.openSet(s, doc, source)
	if err != nil {
		undo()
		back, berr := a.openSet(s, old.doc, old.source)
		if berr != nil {
			a.log.Error("hardware: the previous gates did not open again; none is driven", "error", berr.Error())
			back = &hwSet{doc: hardware.Document{}, source: old.source, gates: map[string]*gate.Gate{},
				doors: map[string]*relay.DoorSensor{}, cameras: map[string]bool{}}
			err = errors.Join(err, fmt.Errorf("the previous gates did not open again: %w", berr))
		}
		s.hw = back
		a.startDoors(ctx, back)
		return err
	}
	for _, r := range dropped {
		r.stop()
		delete(s.readers, r.key)
	}
	s.hw = set
	a.startDoors(ctx, set)
	return nil
}

// holds reports whether reader r holds what reader w needs: a TCP
// address w's clashes with, or the same serial device.
func holds(r, w hardware.Reader) bool {
	switch {
	case r.Kind == hardware.TCP && w.Kind == hardware.TCP:
		ra, err1 := hardware.ParseAddr("", r.Listen)
		wa, err2 := hardware.ParseAddr("", w.Listen)
		if err1 != nil || err2 != nil {
			return false // port 0 (tests): the system picks a free one
		}
		return ra.Clashes(wa)
	case r.Kind == hardware.Serial && w.Kind == hardware.Serial:
		return r.Device == w.Device
	}
	return false
}

// reconcile drives the hardware wanted now, when it is not what runs: the
// cloud's document, checked as the API checks it and against the
// addresses the App listens on. A document that fails is not tried again
// until it changes; the App drives what it drove, and says why in its
// status and to the cloud.
func (a *App) reconcile(ctx context.Context, s *site) {
	doc, source := a.wanted(s)
	a.applyPrinting(s, doc)
	s.hwMu.Lock()
	// The gates alone decide a swap: a document that changes only the
	// kiosk's printing, or only who says it, leaves them running.
	same := hardware.Equal(hardware.Document{Gates: doc.Gates}, hardware.Document{Gates: s.hw.doc.Gates})
	if same {
		s.hw.doc, s.hw.source = doc, source
	}
	s.hwMu.Unlock()
	st := a.hwState.Load()
	switch {
	case same:
		if st.source != source || st.err != nil {
			a.setHardwareState(&hwState{source: source})
		}
		return
	case st.tried != nil && hardware.Equal(doc, *st.tried):
		return // failed already; waits for another document
	}
	var err error
	if source == SourceCloud {
		err = a.checkHardware(doc)
	}
	if err == nil {
		err = a.swap(ctx, s, doc, source)
	}
	if err != nil {
		a.log.Error("hardware: not applied; the previous hardware goes on", "source", source, "error", err.Error())
		tried := doc.Clone()
		s.hwMu.RLock()
		running := s.hw.source
		s.hwMu.RUnlock()
		a.setHardwareState(&hwState{source: running, err: err, at: a.d.Now(), tried: &tried})
		return
	}
	a.log.Info("hardware applied", "source", source, "gates", len(doc.Gates))
	a.setHardwareState(&hwState{source: source})
}

// checkHardware checks a document from the cloud as the cloud's API does,
// and that no TCP reader takes an address the App listens on. (The file's
// was checked by config.Load.)
func (a *App) checkHardware(doc hardware.Document) error {
	d := &strictjson.Decoder{}
	doc.Check(d, "", a.cfg.Reserved())
	if len(d.Problems) > 0 {
		return fmt.Errorf("hardware: %s", d.Problems[0])
	}
	return nil
}

// applyPrinting gives the kiosk the document's label and printer.
func (a *App) applyPrinting(s *site, doc hardware.Document) {
	if s.kiosk == nil || doc.Kiosk == nil {
		return
	}
	printer := doc.Kiosk.Printer
	if printer == "" {
		printer = a.d.KioskPrinter
	}
	if err := s.kiosk.srv.SetPrinting(doc.Kiosk.Label, printer); err != nil {
		a.log.Error("hardware: kiosk printing not applied", "error", err.Error())
	}
}

func (a *App) setHardwareState(st *hwState) { a.hwState.Store(st) }

// HardwareError says why the App does not drive the hardware the cloud
// sent it; "" when it does, or the cloud sent none. The sync half's
// status carries it to the cloud.
func (a *App) HardwareError() string {
	if st := a.hwState.Load(); st != nil && st.err != nil {
		return st.err.Error()
	}
	return ""
}

// hardwareStatus is HardwareStatus now.
func (a *App) hardwareStatus() HardwareStatus {
	st := a.hwState.Load()
	if st == nil {
		return HardwareStatus{Source: SourceConfig}
	}
	out := HardwareStatus{Source: st.source}
	if st.err != nil {
		at := st.at.UTC()
		out.Error, out.ErrorAt = st.err.Error(), &at
	}
	return out
}

// runHardware keeps the hardware the App drives what is wanted until ctx
// ends: at each change of the cloud's document it reconciles. A reader
// that fails on its own (its listener broken) stops the App, as it
// always has.
func (a *App) runHardware(ctx context.Context, s *site) error {
	s.hwMu.Lock()
	for _, r := range s.readers {
		a.startReader(ctx, s, r)
	}
	a.startDoors(ctx, s.hw)
	s.hwMu.Unlock()
	for {
		changed := s.cache.HardwareChanged()
		a.reconcile(ctx, s)
		select {
		case <-ctx.Done():
			return nil
		case err := <-s.failed:
			return err
		case <-changed:
		}
	}
}

// publishReaders records the TCP readers' addresses for Listening.
func (a *App) publishReaders(s *site) {
	out := map[string][]net.Addr{}
	for _, gc := range s.hw.doc.Gates {
		for _, rc := range gc.Readers {
			if r, ok := s.readers[readerKey(gc.ID, rc)]; ok && r.tcp != nil {
				out[gc.ID] = append(out[gc.ID], r.tcp.Addr())
			}
		}
	}
	a.readers.Store(&out)
}
