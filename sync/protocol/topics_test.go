package protocol

import "testing"

// SharedFilters in the default group are the Shared constants.
func TestSharedFilters_DefaultGroup(t *testing.T) {
	got := SharedFilters(DefaultShareGroup)
	want := []string{SharedFacts, SharedResync, SharedStatus}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("filter %d: got %q, want %q", i, got[i], want[i])
		}
	}
	if g := SharedFilters("ours")[0]; g != "$share/ours/svc/v1/+/+/sites/+/edges/+/facts" {
		t.Fatalf("got %q", g)
	}
}
