package edgesync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker/dynsec"
)

// Accounts are the edges' accounts at Mosquitto, kept through its dynamic
// security plugin: cloud.BrokerAccounts over a dynsec.Control. A plugin
// that cannot be reached is cloud.ErrBrokerUnavailable.
type Accounts struct{ Control *dynsec.Control }

var _ cloud.BrokerAccounts = Accounts{}

// PutEdge gives the edge its account (dynsec.Control.PutEdge).
func (a Accounts) PutEdge(ctx context.Context, e cloud.Edge, password string, made time.Time) error {
	return unavailable(a.Control.PutEdge(ctx, cloud.EdgeSite(e.Tenant, e.SiteID), e.ID, password, made))
}

// EdgeAccounts returns the plugin's clients whose usernames are edge IDs.
func (a Accounts) EdgeAccounts(ctx context.Context) ([]cloud.BrokerAccount, error) {
	clients, err := a.Control.ListClients(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	var out []cloud.BrokerAccount
	for _, c := range clients {
		if !ids.Valid(ids.Edge, c.Username) {
			continue // the admin, the cloud's own, an operator's
		}
		made, _ := c.Made()
		out = append(out, cloud.BrokerAccount{EdgeID: c.Username, Disabled: c.Disabled, MadeAt: made})
	}
	return out, nil
}

// DisableEdge disables the edge's client; none is nil.
func (a Accounts) DisableEdge(ctx context.Context, edgeID string) error {
	if err := a.Control.DisableClient(ctx, edgeID); err != nil && !errors.Is(err, dynsec.ErrNotFound) {
		return unavailable(err)
	}
	return nil
}

// DeleteEdge deletes the edge's client and role; none is nil.
func (a Accounts) DeleteEdge(ctx context.Context, edgeID string) error {
	if err := a.Control.DeleteEdge(ctx, edgeID); err != nil && !errors.Is(err, dynsec.ErrNotFound) {
		return unavailable(err)
	}
	return nil
}

// unavailable marks the plugin's unavailability as the cloud's.
func unavailable(err error) error {
	if errors.Is(err, dynsec.ErrUnavailable) {
		return fmt.Errorf("%w: %w", cloud.ErrBrokerUnavailable, err)
	}
	return err
}

// DefaultReconcileEvery is how often Reconciler reconciles when nothing
// wakes it: how long a revocation made while the broker was down, or by
// another process, waits at most once the broker is back.
const DefaultReconcileEvery = 15 * time.Second

// Reconciler keeps Mosquitto's accounts in step with the cloud: it makes
// the cloud's own account when it is missing, then runs
// cloud.Service.ReconcileBrokerAccounts every Every, and at once when the
// service revokes an edge. Every cloud process may run one: each step is
// idempotent.
type Reconciler struct {
	Service *cloud.Service
	Control *dynsec.Control
	// CloudUsername and CloudPassword are the cloud processes' own
	// account (dynsec.Control.PutCloud); an empty username makes none.
	CloudUsername, CloudPassword string
	Every                        time.Duration // DefaultReconcileEvery when 0
	Grace                        time.Duration // cloud.BrokerOrphanGrace when 0
	Log                          *slog.Logger  // slog.Default() when nil
}

// Run reconciles until ctx ends, then returns nil. A round that fails is
// logged, and the next one tries again.
func (r *Reconciler) Run(ctx context.Context) error {
	every, log := r.Every, r.Log
	if every <= 0 {
		every = DefaultReconcileEvery
	}
	if log == nil {
		log = slog.Default()
	}
	cloudDone := r.CloudUsername == ""
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if !cloudDone {
			if err := r.Control.PutCloud(ctx, r.CloudUsername, r.CloudPassword); err != nil {
				if ctx.Err() == nil {
					log.Warn("the cloud's broker account", "username", r.CloudUsername, "err", err)
				}
			} else {
				cloudDone = true
			}
		}
		done, err := r.Service.ReconcileBrokerAccounts(ctx, r.Grace)
		if err != nil && ctx.Err() == nil {
			log.Warn("reconcile edges' broker accounts", "err", err)
		}
		for _, id := range done.Disabled {
			log.Info("disabled the broker account of a revoked edge", "edge_id", id)
		}
		for _, id := range done.Deleted {
			log.Info("deleted the broker account of no edge", "edge_id", id)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-r.Service.BrokerAccountsWake():
		}
	}
}
