// Package gcpercent sets a program's own default GOGC: svc-cloud's and
// svc-edge's differ from the runtime's 100, each for its own target, and
// an operator's GOGC in the environment still wins.
//
// It may import the standard library only.
package gcpercent

import "runtime/debug"

// Default sets GOGC to percent unless getenv("GOGC") is set, which the
// runtime has applied then.
func Default(getenv func(string) string, percent int) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(percent)
	}
}
