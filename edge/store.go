package edge

import (
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/gate"
	"github.com/svc-vms/svc/sync/protocol"
)

// store adapts the cache to the gates: the View is the State, and every
// recorded fact wakes the sync half to publish it.
type store struct {
	c      *cache.Cache
	notify func()
}

var _ gate.Store = store{}

func (s store) State() gate.State { return s.c.View() }

func (s store) Record(visits []protocol.Visit, f protocol.Fact) (protocol.Fact, error) {
	stored, err := s.c.Record(cache.LocalChange{Visits: visits}, f)
	if err == nil {
		s.notify()
	}
	return stored, err
}
