package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/update"
	"github.com/svc-vms/svc/shared/keyfile"
	"github.com/svc-vms/svc/shared/release"
)

// updateFlags are run's flags for updates.
type updateFlags struct {
	cloud, identity string
	every           time.Duration
}

// updates is the daemon's side of signed updates: the Updater when the
// appliance can update, and what GET /status shows either way.
type updates struct {
	u        *update.Updater
	slots    update.Supervised
	slot     string
	disabled string
}

// newUpdates wires the Updater: it needs the supervisor's slots
// (SVC_EDGE_SLOTS), a release key built in, the cloud's URL and the
// identity key. Without one of them the appliance runs and says why it
// does not update.
func newUpdates(f updateFlags, log *slog.Logger) (*updates, error) {
	out := &updates{slot: os.Getenv(update.EnvSlot)}
	slots := os.Getenv(update.EnvSlots)
	trusted, err := release.Trusted()
	if err != nil {
		return nil, err
	}
	switch {
	case slots == "":
		out.disabled = "not started by svc-edge supervise"
	case len(trusted) == 0:
		out.disabled = release.ErrNoTrustedKey.Error()
	case f.cloud == "":
		out.disabled = "no cloud URL (--cloud)"
	case f.identity == "":
		out.disabled = "no identity key (--identity)"
	}
	kind := release.KindBinary
	if slots != "" {
		if out.slots, kind, err = update.Open(slots); err != nil {
			return nil, err
		}
	}
	if out.disabled != "" {
		log.Info("updates are off", "why", out.disabled)
		return out, nil
	}
	// The identity key's file is PKCS #8 PEM, 0600.
	key, err := keyfile.Load(f.identity) // as enrolment made it
	if err != nil {
		return nil, fmt.Errorf("identity key: %w", err)
	}
	out.u = &update.Updater{
		Slots: out.slots, Results: out.slots, Trusted: trusted,
		Source:  &update.HTTP{Base: f.cloud, Key: key, Client: &http.Client{Timeout: 10 * time.Minute}},
		Version: version, Arch: runtime.GOARCH, ARM: goarm(), Slot: out.slot, Kind: kind,
		Every: f.every, Logger: log,
	}
	return out, nil
}

// goarm is the GOARM this binary was built for, "" off arm.
func goarm() string {
	if runtime.GOARCH != "arm" {
		return ""
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "GOARM" {
				return s.Value[:1] // "7" of "7,softfloat"
			}
		}
	}
	return "7"
}

// status is what GET /status shows of updates.
func (u *updates) status() edge.UpdateStatus {
	st := edge.UpdateStatus{Version: version, Slot: u.slot, Enabled: u.u != nil, Disabled: u.disabled, State: update.StateIdle}
	if u.u != nil {
		p := u.u.Progress()
		st.State, st.Target, st.Bytes, st.Size, st.Error = p.State, p.Version, p.Bytes, p.Size, p.Error
	}
	if u.slots != nil {
		if r, ok, err := u.slots.LastResult(); err == nil && ok {
			st.Last = &edge.UpdateResult{Version: r.Version, From: r.From, Outcome: r.Outcome, Reason: r.Reason, At: r.At}
		}
	}
	return st
}

// trialCheck runs the health check of a release on trial once the App is
// ready, and tells the supervisor.
func trialCheck(ctx context.Context, app *edge.App, timeout time.Duration, log *slog.Logger) {
	select {
	case <-ctx.Done():
		return
	case <-app.Ready():
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := app.SelfTest(cctx)
	if err == nil {
		err = faultHealth()
	}
	if err != nil {
		log.Error("trial: health check failed", "error", err.Error())
	} else {
		log.Info("trial: health check passed", "version", version)
	}
	if rerr := update.ReportHealth(err); rerr != nil {
		log.Error("trial: health check not reported", "error", rerr.Error())
	}
}
