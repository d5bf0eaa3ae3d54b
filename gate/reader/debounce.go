package reader

import (
	"context"
	"sync"
	"time"
)

// Debounce returns a Deliver that passes a scan to next unless the same
// text was read at the same gate less than window before (a repeat
// extends the quiet period, so a pass held in front of a camera counts
// once however long it is held). A window ≤ 0 returns next itself. It is
// safe for concurrent use; scans of other texts or gates are not held up.
func Debounce(window time.Duration, next Deliver) Deliver {
	if window <= 0 {
		return next
	}
	type key struct{ gate, text string }
	var mu sync.Mutex
	seen := map[key]time.Time{}
	return func(ctx context.Context, gateID, text string, at time.Time) {
		k := key{gateID, text}
		mu.Lock()
		last, ok := seen[k]
		seen[k] = at
		if len(seen) > 1024 { // forget what no longer matters, so the map stays small
			for k, t := range seen {
				if at.Sub(t) >= window {
					delete(seen, k)
				}
			}
		}
		mu.Unlock()
		if ok && at.Sub(last) < window {
			return
		}
		next(ctx, gateID, text, at)
	}
}
