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

func (s store) Record(ch gate.Change, f protocol.Fact) (protocol.Fact, error) {
	lc := cache.LocalChange{Visits: ch.Visits}
	if r := ch.RestorePunch; r != nil {
		lc.RestorePunch = &cache.PunchRestore{PersonID: r.PersonID, Last: r.Last}
	}
	stored, err := s.c.Record(lc, f)
	if err == nil {
		s.notify()
	}
	return stored, err
}
