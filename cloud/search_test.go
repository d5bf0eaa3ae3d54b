package cloud_test

import (
	"testing"

	"github.com/svc-vms/svc/cloud"
)

func TestSearchIndexed(t *testing.T) {
	for q, want := range map[string]bool{
		"":         false,
		"an":       false,
		"a b c":    false,
		"0% ":      false,
		"ada":      true,
		"100% hu":  true,
		"åsa":      true,
		"a-b-cde":  true,
		"ab-cd-ef": false,
		"東京都":      true,
	} {
		if got := cloud.SearchIndexed(q); got != want {
			t.Errorf("SearchIndexed(%q) = %v, want %v", q, got, want)
		}
	}
}
