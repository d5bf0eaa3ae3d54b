package kek_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud/kek"
)

func ring(t *testing.T, keys ...[]byte) *kek.Ring {
	t.Helper()
	r, err := kek.New(keys...)
	require.NoError(t, err)
	return r
}

func TestSeal_OpensOnlyForItsRow(t *testing.T) {
	r := ring(t, kek.Generate())
	secret := []byte("whsec_c2VjcmV0IG9mIGFuIGVuZHBvaW50")
	sealed := r.Seal("webhook_endpoints.secret:we_1", secret)
	require.True(t, strings.HasPrefix(string(sealed), kek.Prefix+r.ID()+"."), "%s", sealed)
	require.False(t, bytes.Contains(sealed, secret), "the plaintext is not in the sealed value")
	require.NotEqual(t, sealed, r.Seal("webhook_endpoints.secret:we_1", secret), "a fresh nonce each time")

	got, err := r.Open("webhook_endpoints.secret:we_1", sealed)
	require.NoError(t, err)
	require.Equal(t, secret, got)

	for name, c := range map[string]struct {
		ad  string
		v   []byte
		err error
	}{
		"another row":    {"webhook_endpoints.secret:we_2", sealed, kek.ErrOpen},
		"another column": {"webhook_endpoints.prev_secret:we_1", sealed, kek.ErrOpen},
		"flipped byte":   {"webhook_endpoints.secret:we_1", flip(sealed, len(sealed)-3), kek.ErrOpen},
		"cut short":      {"webhook_endpoints.secret:we_1", sealed[:len(kek.Prefix)+12], kek.ErrOpen},
		"no dot":         {"webhook_endpoints.secret:we_1", []byte(kek.Prefix + "0123456789"), kek.ErrOpen},
		"plain":          {"webhook_endpoints.secret:we_1", secret, kek.ErrNotSealed},
		"other kek":      {"webhook_endpoints.secret:we_1", ring(t, kek.Generate()).Seal("webhook_endpoints.secret:we_1", secret), kek.ErrUnknownKEK},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := r.Open(c.ad, c.v)
			require.ErrorIs(t, err, c.err)
		})
	}
}

func flip(b []byte, i int) []byte {
	out := bytes.Clone(b)
	if out[i] == 'A' {
		out[i] = 'B'
	} else {
		out[i] = 'A'
	}
	return out
}

// TestReseal_MovesEverythingToTheCurrentKEK is the rotation: plain values
// and values under an older KEK come out under the current one; values
// already there are left alone.
func TestReseal_MovesEverythingToTheCurrentKEK(t *testing.T) {
	oldK, newK := kek.Generate(), kek.Generate()
	before := ring(t, oldK)
	after := ring(t, newK, oldK)
	const ad = "pass_keys.private:org_1:live:0000abcd"
	plain := []byte("a private key")

	for name, v := range map[string][]byte{"plain": plain, "old kek": before.Seal(ad, plain)} {
		out, changed, err := after.Reseal(ad, v)
		require.NoError(t, err, name)
		require.True(t, changed, name)
		require.True(t, strings.HasPrefix(string(out), kek.Prefix+after.ID()), name)
		got, err := ring(t, newK).Open(ad, out)
		require.NoError(t, err, "%s: opens with the new KEK alone", name)
		require.Equal(t, plain, got)
	}
	current := after.Seal(ad, plain)
	out, changed, err := after.Reseal(ad, current)
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, current, out)

	_, _, err = after.Reseal("pass_keys.private:org_2:live:0000abcd", current)
	require.ErrorIs(t, err, kek.ErrOpen, "a value moved to another row is found at start")
	_, _, err = ring(t, newK).Reseal(ad, before.Seal(ad, plain))
	require.ErrorIs(t, err, kek.ErrUnknownKEK, "an old KEK dropped too early is an error, not data loss")
}

func TestParse(t *testing.T) {
	a, b := kek.Generate(), kek.Generate()
	r, err := kek.Parse("# comment\n\n" + kek.Encode(a) + "\n " + kek.Encode(b) + " \n")
	require.NoError(t, err)
	require.Equal(t, kek.ID(a), r.ID(), "the first key is current")
	old := ring(t, b).Seal("x", []byte("v"))
	got, err := r.Open("x", old)
	require.NoError(t, err, "later keys open")
	require.Equal(t, []byte("v"), got)

	r, err = kek.Parse(kek.Encode(b) + "," + kek.Encode(a))
	require.NoError(t, err)
	require.Equal(t, kek.ID(b), r.ID(), "commas separate too (an environment variable)")

	for _, bad := range []string{"", "# only a comment", "not base64!", kek.Encode(a[:16]), kek.Encode(a) + "\n" + kek.Encode(a)} {
		_, err := kek.Parse(bad)
		require.ErrorIs(t, err, kek.ErrInvalidKey, "%q", bad)
		if len(bad) > 8 {
			require.NotContains(t, err.Error(), bad, "the error does not quote the key")
		}
	}
}

func TestLoadOrCreateFile_MakesAPrivateFileOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kek")
	r, created, err := kek.LoadOrCreateFile(path)
	require.NoError(t, err)
	require.True(t, created)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	again, created, err := kek.LoadOrCreateFile(path)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, r.ID(), again.ID())

	require.NoError(t, os.WriteFile(path, []byte("garbage"), 0o600))
	_, _, err = kek.LoadOrCreateFile(path)
	require.ErrorIs(t, err, kek.ErrInvalidKey, "a damaged file is an error, never replaced")
}
