package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSetGC_DefaultUnlessGOGC(t *testing.T) {
	for name, tc := range map[string]struct {
		gogc string
		want int
	}{
		"unset": {"", defaultGCPercent},
		"set":   {"200", 100}, // left as the runtime has it (100 here)
	} {
		t.Run(name, func(t *testing.T) {
			old := debug.SetGCPercent(100)
			t.Cleanup(func() { debug.SetGCPercent(old) })
			setGC(func(k string) string {
				if k == "GOGC" {
					return tc.gogc
				}
				return ""
			})
			require.Equal(t, tc.want, debug.SetGCPercent(100))
		})
	}
}
