package cloud

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/svc-vms/svc/shared/release"
)

// This file fires the fleet's events (docs/decisions.md, "Fleet events
// (issue 17)"): edge.online and edge.offline when the state the cloud
// presents of an edge changes, and edge.updated and edge.update_failed
// when an appliance reports an update's outcome. Each change fires one
// event however many cloud processes see it: the event is written with a
// conditional update of what was last announced, in one transaction.

// DefaultEdgeAnnounceInterval is how often EdgeAnnouncer looks for edges
// whose state changed unannounced: an edge gone silent is announced
// offline at most this long after EdgeSilentAfter.
const DefaultEdgeAnnounceInterval = 30 * time.Second

// edgeAnnounceBatch is how many edges one EdgesToAnnounce call returns.
const edgeAnnounceBatch = 100

// present returns edges as the cloud shows them at now (Edge.Presented),
// each with what it last said of its updates; edgeID names the one edge
// when edges holds only it ("" reads the tenant's updates once).
func (s *Service) present(ctx context.Context, t Tenant, edgeID string, edges []Edge) error {
	updates, err := s.store.EdgeUpdates(ctx, t, edgeID)
	if err != nil {
		return err
	}
	byEdge := make(map[string]*EdgeUpdate, len(updates))
	for i := range updates {
		byEdge[updates[i].EdgeID] = &updates[i]
	}
	now := s.Now()
	for i := range edges {
		edges[i] = edges[i].Presented(now)
		edges[i].Update = byEdge[edges[i].ID]
	}
	return nil
}

// Announcement is the state an edge.online or edge.offline event should
// announce of e at now, "" when none is due: online at its first online
// status since it was last announced offline (or ever); offline once it
// is revoked, silent for EdgeSilentAfter, or offline by its last will for
// EdgeSilentAfter. An appliance back within that time, as after a reboot
// or a broker restart, fires neither.
func (e Edge) Announcement(now time.Time) string {
	shown := e.Presented(now)
	switch {
	case e.Announced != EdgeOnline && shown.State == EdgeOnline:
		return EdgeOnline
	case e.Announced != EdgeOnline || shown.State != EdgeOffline:
		return ""
	case e.RevokedAt != nil, e.State == EdgeOnline: // revoked, or silent
		return EdgeOffline
	case e.StateSince == nil || !now.Before(e.StateSince.Add(EdgeSilentAfter)):
		return EdgeOffline
	}
	return ""
}

// announceEdge fires edge.online or edge.offline when one is due for e
// (Edge.Announcement), and reports whether it fired. It returns nil,
// having fired nothing, when another process announced the change first.
func (s *Service) announceEdge(ctx context.Context, e Edge) (bool, error) {
	to := e.Announcement(s.Now())
	if s.render == nil || to == "" {
		return false, nil
	}
	shown := []Edge{e}
	if err := s.present(ctx, e.Tenant, e.ID, shown); err != nil {
		return false, fmt.Errorf("announce edge %s: %w", e.ID, err)
	}
	typ := EventEdgeOnline
	if to == EdgeOffline {
		typ = EventEdgeOffline
	}
	data, err := s.render(shown[0])
	if err != nil {
		return false, fmt.Errorf("announce edge %s: %w", e.ID, err)
	}
	ctx, l := withEvents(ctx)
	if err := s.record(ctx, l, []string{typ}, "edge", e.ID, e.Tenant, data); err != nil {
		return false, err
	}
	err = s.committed(l, s.store.AnnounceEdge(ctx, e.Tenant, e.ID, e.Announced, to))
	switch {
	case errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("announce edge %s: %w", e.ID, err)
	}
	return true, nil
}

// AnnounceEdges fires edge.online or edge.offline for every edge due one
// (Edge.Announcement: an edge silent or offline for EdgeSilentAfter, one
// whose status was recorded by a process that stopped before announcing
// it) and returns how many it fired. Any number of processes may run it
// at once.
func (s *Service) AnnounceEdges(ctx context.Context) (int, error) {
	fired := 0
	for {
		edges, err := s.store.EdgesToAnnounce(ctx, s.Now().Add(-EdgeSilentAfter), edgeAnnounceBatch)
		if err != nil {
			return fired, fmt.Errorf("edges to announce: %w", err)
		}
		var errs []error
		before := fired
		for _, e := range edges {
			ok, err := s.announceEdge(ctx, e)
			if err != nil {
				errs = append(errs, err)
			}
			if ok {
				fired++
			}
		}
		// A full batch that fired something may be followed by more;
		// those fired no longer match. One that fired nothing (changed
		// meanwhile, or announced by another process) waits for the
		// next round rather than read the same edges again.
		if len(edges) < edgeAnnounceBatch || len(errs) > 0 || fired == before {
			return fired, errors.Join(errs...)
		}
	}
}

// updateEvent is the event an appliance's poll u fires, given what it
// said before (prev, nil for its first poll): edge.updated or
// edge.update_failed for an update outcome not reported before, "" for
// none.
func updateEvent(prev *EdgeUpdate, u EdgeUpdate) string {
	switch {
	case u.LastOutcome == "" || u.LastAt == nil:
		return ""
	case prev != nil && prev.LastOutcome == u.LastOutcome && prev.LastVersion == u.LastVersion &&
		prev.LastAt != nil && prev.LastAt.Equal(*u.LastAt):
		return ""
	case u.LastOutcome == release.Committed:
		return EventEdgeUpdated
	}
	return EventEdgeUpdateFailed
}

// putEdgeUpdate stores what the appliance of edge e said of its updates
// (EdgePoll) and fires edge.updated or edge.update_failed, in the same
// transaction, for an outcome it had not reported. Two polls at once store
// one after the other; the outcome fires once.
func (s *Service) putEdgeUpdate(ctx context.Context, e Edge, u EdgeUpdate) error {
	for attempt := 0; ; attempt++ {
		stored, err := s.store.EdgeUpdates(ctx, e.Tenant, e.ID)
		if err != nil {
			return err
		}
		var prev *EdgeUpdate
		var polled *time.Time
		if len(stored) > 0 {
			prev, polled = &stored[0], &stored[0].PolledAt
		}
		wctx, l := withEvents(ctx)
		if typ := updateEvent(prev, u); typ != "" && s.render != nil {
			shown := []Edge{e}
			if err := s.present(ctx, e.Tenant, e.ID, shown); err != nil {
				return err
			}
			shown[0].Update = &u
			data, err := s.render(shown[0])
			if err != nil {
				return err
			}
			if err := s.record(wctx, l, []string{typ}, "edge", e.ID, e.Tenant, data); err != nil {
				return err
			}
		}
		err = s.committed(l, s.store.PutEdgeUpdate(wctx, u, polled))
		if !errors.Is(err, ErrConflict) || attempt == 2 {
			return err
		}
	}
}

// EdgeAnnouncer runs Service.AnnounceEdges every Interval until its
// context ends. Every replica of the cloud may run one: each change is
// announced once however many run.
type EdgeAnnouncer struct {
	Service  *Service
	Interval time.Duration // DefaultEdgeAnnounceInterval when 0
	Log      *slog.Logger  // slog.Default() when nil
}

// Run announces until ctx ends, then returns nil. A round that fails is
// logged and the next one tries again.
func (a *EdgeAnnouncer) Run(ctx context.Context) error {
	return every(ctx, a.Interval, DefaultEdgeAnnounceInterval, a.Log, "edge state events", "announced edge states", a.Service.AnnounceEdges)
}

// every runs round now and every interval (def when interval is 0) until
// ctx ends, then returns nil, logging (to log, slog.Default() when nil)
// what fails, as what, and how many things a round did, as did, when it
// did some.
func every(ctx context.Context, interval, def time.Duration, log *slog.Logger, what, did string, round func(context.Context) (int, error)) error {
	if interval <= 0 {
		interval = def
	}
	if log == nil {
		log = slog.Default()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		n, err := round(ctx)
		if err != nil && ctx.Err() == nil {
			log.Warn(what, "err", err)
		}
		if n > 0 {
			log.Info(did, "count", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
