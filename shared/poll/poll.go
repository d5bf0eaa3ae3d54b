// Package poll waits for a condition that has no event to wait on, with a
// deadline: a test waiting for a listener, a state reached by another
// process, an API answer after an outage. It checks the condition, then
// waits on a timer whose period grows by half each time up to a ceiling,
// so a quick condition is seen at once and a slow one is not asked a
// thousand times a second.
//
// It may import the standard library only.
package poll

import "time"

// first is the wait after the first check.
const first = time.Millisecond

// Until calls cond until it returns true, or until timeout has passed
// since Until was called, and reports whether cond held. Between calls it
// waits 1 ms, then half as long again each time, up to most.
func Until(timeout, most time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	wait := min(first, most)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for !cond() {
		if !time.Now().Before(deadline) {
			return false
		}
		<-timer.C
		wait = min(wait*3/2+time.Microsecond, most)
		timer.Reset(wait)
	}
	return true
}
