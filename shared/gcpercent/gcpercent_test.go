package gcpercent

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefault_UnlessGOGC(t *testing.T) {
	for name, tc := range map[string]struct {
		gogc string
		want int
	}{
		"unset": {"", 42},
		"set":   {"200", 100}, // left as the runtime has it (100 here)
	} {
		t.Run(name, func(t *testing.T) {
			old := debug.SetGCPercent(100)
			t.Cleanup(func() { debug.SetGCPercent(old) })
			Default(func(k string) string {
				if k == "GOGC" {
					return tc.gogc
				}
				return ""
			}, 42)
			require.Equal(t, tc.want, debug.SetGCPercent(100))
		})
	}
}
