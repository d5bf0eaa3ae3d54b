package durable_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/durable"
)

// CreateNew writes a whole new file with its mode, and never replaces one.
func TestCreateNew(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	require.NoError(t, durable.CreateNew(path, []byte("first"), 0o600))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), st.Mode().Perm())

	err = durable.CreateNew(path, []byte("second"), 0o600)
	require.ErrorIs(t, err, fs.ErrExist)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "first", string(got))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")

	require.Error(t, durable.CreateNew(filepath.Join(dir, "missing", "x"), nil, 0o600), "no directory")
}
