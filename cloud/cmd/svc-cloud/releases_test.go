package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/release"
)

// keygen writes a private key file and prints the public half for the
// build; add stores a signed release the appliance can verify; a version
// is published once; mistakes are usage errors naming the flag.
func TestReleases_KeygenAddList(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(t.TempDir(), "release.key")
	out := runCLI(t, "releases", "keygen", "--out", key)
	require.Contains(t, out, "public key: ")
	pub := strings.Fields(strings.SplitN(out, "public key: ", 2)[1])[0]
	trusted, err := release.ParsePublicKeys(pub)
	require.NoError(t, err)
	st, err := os.Stat(key)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	bundle := filepath.Join(t.TempDir(), "svc-edge")
	require.NoError(t, os.WriteFile(bundle, bytes.Repeat([]byte("svc-edge"), 1000), 0o755))
	out = runCLI(t, "releases", "add", bundle, "--data", dir, "--version", "2.0.0", "--arch", "arm/7", "--sign-with", key)
	require.Contains(t, out, "release 2.0.0 for armv7: 8000 bytes")

	store, err := openData(t, dir)
	require.NoError(t, err)
	r, err := store.Release(context.Background(), "2.0.0", "armv7")
	require.NoError(t, err)
	store.Close()
	env, err := release.ParseEnvelope(r.Envelope)
	require.NoError(t, err)
	m, err := env.Verify(trusted)
	require.NoError(t, err)
	require.Equal(t, "arm", m.Arch)
	require.Equal(t, "7", m.ARM)

	err = run(context.Background(), []string{"releases", "add", bundle, "--data", dir, "--version", "2.0.0", "--arch", "arm/7", "--sign-with", key},
		&bytes.Buffer{}, os.Stderr)
	require.ErrorContains(t, err, "exists")
	require.Contains(t, runCLI(t, "releases", "list", "--data", dir), "2.0.0    armv7")

	for _, args := range [][]string{
		{"releases", "add", "--version", "2", "--arch", "arm64", "--sign-with", key},
		{"releases", "add", bundle, "--version", "../x", "--arch", "arm64", "--sign-with", key},
		{"releases", "add", bundle, "--version", "2", "--arch", "386", "--sign-with", key},
		{"releases", "add", bundle, "--version", "2", "--arch", "arm64"},
		{"releases", "keygen"},
	} {
		err := run(context.Background(), args, &bytes.Buffer{}, os.Stderr)
		require.ErrorAs(t, err, new(usageError), "%q", args)
	}
}
