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
// holder and the waiters, and the entry goes when it drops to zero.
type turn struct {
	ch   chan struct{}
	refs int
}

// lock waits for the pass's turn and returns the function that ends it,
// or ctx's error when ctx ends first.
func (p *Passes) lock(ctx context.Context, id string) (func(), error) {
	p.mu.Lock()
	if p.held == nil {
		p.held = map[string]*turn{}
	}
	t := p.held[id]
	if t == nil {
		t = &turn{ch: make(chan struct{}, 1)}
		p.held[id] = t
	}
	t.refs++
	p.mu.Unlock()
	select {
	case t.ch <- struct{}{}:
		return func() { <-t.ch; p.release(id, t) }, nil
	case <-ctx.Done():
		p.release(id, t)
		return nil, ctx.Err()
	}
}

func (p *Passes) release(id string, t *turn) {
	p.mu.Lock()
	if t.refs--; t.refs == 0 {
		delete(p.held, id)
	}
	p.mu.Unlock()
}
