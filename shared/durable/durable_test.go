package durable_test

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/durable"
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

// WriteFile replaces a file whole and leaves no temporary file.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	write := func(s string) func(w io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	require.NoError(t, durable.WriteFile(path, 0o644, write("first")))
	require.NoError(t, durable.WriteFile(path, 0o600, write("second")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "second", string(got))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fs.FileMode(0o600), st.Mode().Perm())

	err = durable.WriteFile(path, 0o644, func(io.Writer) error { return fs.ErrClosed })
	require.ErrorIs(t, err, fs.ErrClosed)
	got, _ = os.ReadFile(path)
	require.Equal(t, "second", string(got), "a failed write leaves the old file")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left behind")
}
