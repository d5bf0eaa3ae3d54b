package poll

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestUntil: a condition that comes true is seen, and the waits between
// checks grow to the ceiling and no further; one that never does is given
// up at the deadline.
func TestUntil(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var at []time.Duration
		ok := Until(time.Minute, 40*time.Millisecond, func() bool {
			at = append(at, time.Since(start))
			return time.Since(start) >= time.Second
		})
		if !ok {
			t.Fatal("the condition came true, Until said it did not")
		}
		for i := 1; i < len(at); i++ {
			if gap := at[i] - at[i-1]; gap > 40*time.Millisecond {
				t.Fatalf("a wait of %v between checks %d and %d, past the 40 ms ceiling", gap, i-1, i)
			}
		}
		if gap := at[1] - at[0]; gap != time.Millisecond {
			t.Errorf("first wait %v, want 1 ms", gap)
		}
		if n := len(at); n > 1000/40+20 {
			t.Errorf("%d checks in a second: the waits did not grow", n)
		}

		start = time.Now()
		if Until(2*time.Second, 100*time.Millisecond, func() bool { return false }) {
			t.Fatal("a condition that never held was reported as held")
		}
		if took := time.Since(start); took < 2*time.Second || took > 2*time.Second+100*time.Millisecond {
			t.Errorf("gave up after %v, want at the 2 s deadline", took)
		}
	})
}
