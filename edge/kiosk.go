package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/svc-vms/svc/gate/qrdecode"
	"github.com/svc-vms/svc/kiosk"
	"github.com/svc-vms/svc/kiosk/printer"
)

// Files of the kiosk, in the directory of the cache (the data partition).
const (
	// KioskDevicesFile holds the paired kiosks and the reception PIN.
	KioskDevicesFile = "kiosk.json"
	// PrintJobsDir holds the badges on their way to a label printer.
	PrintJobsDir = "print-jobs"
)

// OnlineWait is how long facts may wait unacknowledged before the kiosk
// says the site is offline though the broker is connected: the cloud
// behind it is not taking them.
const OnlineWait = 30 * time.Second

// kioskSite is the kiosk an App serves when its config has one.
type kioskSite struct {
	srv     *kiosk.Server
	handler http.Handler
	devices *kiosk.Devices
	ln      net.Listener
}

// openKiosk opens the kiosk's devices, its print queue and its listener.
func (a *App) openKiosk(s *site) error {
	dir := filepath.Dir(a.cfg.CachePath)
	devices, err := kiosk.OpenDevices(filepath.Join(dir, KioskDevicesFile))
	if err != nil {
		return fmt.Errorf("edge: %w", err)
	}
	queue, err := printer.OpenQueue(filepath.Join(dir, PrintJobsDir), printer.QueueOptions{Now: a.d.Now, Log: a.log})
	if err != nil {
		return fmt.Errorf("edge: kiosk print queue: %w", err)
	}
	store := &kioskStore{c: s.cache, siteID: a.cfg.Site.SiteID, notify: s.notify, badges: s.badge, now: a.d.Now,
		online: a.online, log: a.log.Warn}
	srv, err := kiosk.New(kiosk.Config{Store: store, Devices: devices, Languages: a.cfg.Kiosk.Languages, Printer: queue,
		Label: a.cfg.Kiosk.Label, DecodeImage: qrdecode.DecodeBytes, Now: a.d.Now, Logger: a.log,
		DefaultPrinter: a.d.KioskPrinter})
	if err != nil {
		return fmt.Errorf("edge: %w", err)
	}
	ln, err := net.Listen("tcp", a.cfg.Kiosk.Listen)
	if err != nil {
		return fmt.Errorf("edge: kiosk: %w", err)
	}
	s.kiosk = &kioskSite{srv: srv, handler: srv.Handler(), devices: devices, ln: ln}
	a.kioskDevices.Store(devices)
	a.kioskHandler.Store(&s.kiosk.handler)
	return nil
}

// NewPairingCode makes a one-time code pairing a browser as a kiosk in
// mode; an error when the App serves no kiosk or has not started.
func (a *App) NewPairingCode(name, mode string) (kiosk.PairingCode, error) {
	d := a.kioskDevices.Load()
	if d == nil {
		return kiosk.PairingCode{}, errors.New("edge: no kiosk")
	}
	printer := a.d.KioskPrinter
	if s := a.running.Load(); s != nil && s.kiosk != nil {
		printer = s.kiosk.srv.DefaultPrinter() // the hardware's, from the cloud or the file
	}
	return d.NewCode(name, mode, printer, a.d.Now())
}

// KioskHandler is the kiosk as the App serves it on kiosk.listen, for a
// caller in the same process (the load program times requests through it
// without a network); nil when the config has no kiosk or before Ready.
func (a *App) KioskHandler() http.Handler {
	if h := a.kioskHandler.Load(); h != nil {
		return *h
	}
	return nil
}

// online reports whether the cloud takes the site's facts: the broker is
// connected and nothing has waited long for an acknowledgement.
func (a *App) online() bool {
	if a.d.Online == nil {
		return false
	}
	return a.d.Online()
}

// serveKiosk serves the kiosk until ctx ends.
func (a *App) serveKiosk(ctx context.Context, k *kioskSite) error {
	srv := &http.Server{Handler: k.handler, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: readTimeout,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute, ErrorLog: slog.NewLogLogger(a.log.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
		}
	}()
	err := srv.Serve(k.ln)
	<-done
	if !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("kiosk http: %w", err)
	}
	return nil
}
