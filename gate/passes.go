package gate

import (
	"context"
	"sync"
)

// Passes serialises the scans of each pass: a scan holds its pass from
// reading the state to recording what it did, so the next scan of the same
// pass, at this gate or another sharing the Passes, decides on the state
// the first one left. The zero value is ready to use.
type Passes struct {
	mu   sync.Mutex
	held map[string]*turn
}

// turn is one pass's lock: a token in ch is the holder's; refs counts the
// holder and the waiters, and the entry goes when it drops to zero. Turns
// are pooled (turns): a scan takes one and gives it back, with its empty
// channel, rather than make both anew.
type turn struct {
	ch   chan struct{}
	refs int
}

var turns = sync.Pool{New: func() any { return &turn{ch: make(chan struct{}, 1)} }}

// lock waits for the pass's turn and returns it, for unlock; or ctx's
// error when ctx ends first.
func (p *Passes) lock(ctx context.Context, id string) (*turn, error) {
	p.mu.Lock()
	if p.held == nil {
		p.held = map[string]*turn{}
	}
	t := p.held[id]
	if t == nil {
		t = turns.Get().(*turn)
		p.held[id] = t
	}
	t.refs++
	p.mu.Unlock()
	select {
	case t.ch <- struct{}{}:
		return t, nil
	case <-ctx.Done():
		p.release(id, t)
		return nil, ctx.Err()
	}
}

// unlock ends the turn lock returned for the pass.
func (p *Passes) unlock(id string, t *turn) {
	<-t.ch
	p.release(id, t)
}

func (p *Passes) release(id string, t *turn) {
	p.mu.Lock()
	if t.refs--; t.refs == 0 {
		delete(p.held, id)
		turns.Put(t) // no holder, no waiter: its channel is empty
	}
	p.mu.Unlock()
}
