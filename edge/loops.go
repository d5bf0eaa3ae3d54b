package edge

import (
	"context"
	"time"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/gate/relay"
)

// pruneLoop prunes the cache at start and every PruneEvery: visits whose
// pass ended more than PruneRetention ago. A failure is logged and tried
// again next time; it does not stop the gates.
func (a *App) pruneLoop(ctx context.Context, c *cache.Cache) error {
	t := time.NewTicker(PruneEvery)
	defer t.Stop()
	for {
		cutoff := a.d.Now().Add(-PruneRetention)
		n, err := c.Prune(cutoff)
		switch {
		case err != nil:
			a.log.Error("prune failed", "error", err.Error())
		case n > 0:
			a.m.addPruned(n)
			a.log.Info("pruned visits", "visits", n, "ended_before", cutoff.UTC())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// watchDoor logs every change of a gate's door and keeps the last state
// for /metrics and /status.
func (a *App) watchDoor(ctx context.Context, gateID string, d *relay.DoorSensor) error {
	open, _ := d.Open()
	a.m.door(gateID, open)
	for {
		open, err := d.WaitChange(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			a.log.Warn("door sensor", "gate_id", gateID, "error", err.Error())
			continue
		}
		a.m.door(gateID, open)
		a.log.Info("door", "gate_id", gateID, "open", open)
	}
}
