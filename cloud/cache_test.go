package cloud

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/form"
)

func TestParseForm_CachesByTheSchemaBytes(t *testing.T) {
	schema := form.Default("meeting")
	a, err := parseForm(schema)
	require.NoError(t, err)
	b, err := parseForm(append([]byte{}, schema...))
	require.NoError(t, err)
	require.Same(t, a, b, "the same bytes give the same parsed form")

	_, err = parseForm([]byte(`{"type":"array"}`))
	require.Error(t, err)
	_, err = parseForm([]byte(`{"type":"array"}`))
	require.Error(t, err, "a failure is not cached as a success")

	l1, err := loadLocation("Europe/London")
	require.NoError(t, err)
	l2, err := loadLocation("Europe/London")
	require.NoError(t, err)
	require.Same(t, l1, l2)
	_, err = loadLocation("Mars/Olympus")
	require.Error(t, err)
}

// TestParseForm_CachedWithoutCopying checks that a form already parsed is
// found without copying its schema into a string key (some KB on every
// visit made or shown).
func TestParseForm_CachedWithoutCopying(t *testing.T) {
	schema := form.Default("meeting")
	_, err := parseForm(schema)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := parseForm(schema); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}
