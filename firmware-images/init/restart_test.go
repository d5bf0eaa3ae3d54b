package main

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestRestartEdge: svc-edge is started again after every exit, a second
// after a clean one, and after failures in a row with a delay that
// doubles up to a minute; a run that lasted five minutes starts the
// delays again, however it ended. A fake clock: no test sleeps.
func TestRestartEdge(t *testing.T) {
	fail := errors.New("exit status 1")
	type exit struct {
		err   error
		lasts time.Duration // how long the run took
	}
	for _, tc := range []struct {
		name  string
		runs  []exit
		waits []time.Duration // the delay after each run
	}{
		{"failures in a row back off to a minute",
			[]exit{{fail, 0}, {fail, 0}, {fail, 0}, {fail, 0}, {fail, 0}, {fail, 0}, {fail, 0}, {fail, 0}},
			[]time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute, time.Minute}},
		{"a clean exit restarts after a second and resets the delay",
			[]exit{{nil, time.Second}, {fail, time.Second}, {fail, time.Second}, {nil, time.Second}, {fail, time.Second}},
			[]time.Duration{time.Second, 2 * time.Second, 4 * time.Second, time.Second, 2 * time.Second}},
		{"a failure after five minutes' run resets the delay",
			[]exit{{fail, 0}, {fail, 0}, {fail, 0}, {fail, 5 * time.Minute}, {fail, 4 * time.Minute}},
			[]time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, time.Second, 2 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
			var runs int
			var waits []time.Duration
			restartEdge(func() error {
				if runs >= len(tc.runs) {
					t.Fatalf("run %d: restarted after the test's last wait", runs+1)
				}
				r := tc.runs[runs]
				runs++
				clock = clock.Add(r.lasts)
				return r.err
			}, func() time.Time { return clock }, func(d time.Duration) bool {
				waits = append(waits, d)
				clock = clock.Add(d)
				return len(waits) < len(tc.runs)
			})
			if runs != len(tc.runs) {
				t.Errorf("svc-edge ran %d times, want %d (started again after every exit)", runs, len(tc.runs))
			}
			if fmt.Sprint(waits) != fmt.Sprint(tc.waits) {
				t.Errorf("waited %v between runs, want %v", waits, tc.waits)
			}
		})
	}
}
