package badgekey_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/badgekey"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passtoken"
)

func keyPath(t *testing.T) string { return filepath.Join(t.TempDir(), badgekey.FileName) }

// The first start makes the key and its file (mode 0600, PEM PKCS #8, as
// openssl reads it); every later start, and a restart after a power cut,
// gets the same key back.
func TestOpen_MakesOnceThenKeeps(t *testing.T) {
	path := keyPath(t)
	k, created, err := badgekey.Open(path, nil)
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, path, k.Path())
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(raw, []byte("-----BEGIN PRIVATE KEY-----\n")), "%s", raw)
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left beside it")

	again, created, err := badgekey.Open(path, nil)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, k.Public(), again.Public())
	require.Equal(t, k.ID(), again.ID())
	id, err := passtoken.BadgeKeyID(k.Public())
	require.NoError(t, err)
	require.Equal(t, id, k.ID())
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, raw, after, "opening an existing key writes nothing")

	// Two appliances' keys differ.
	other, _, err := badgekey.Open(keyPath(t), nil)
	require.NoError(t, err)
	require.NotEqual(t, k.Public(), other.Public())
}

// A key file that is there but unusable stops the start with an error
// naming the file and what to do, and the file is left exactly as it was:
// badges already printed depend on the key it held.
func TestOpen_DamagedFileIsAnErrorNeverReplaced(t *testing.T) {
	good := func(t *testing.T) []byte {
		path := keyPath(t)
		_, _, err := badgekey.Open(path, nil)
		require.NoError(t, err)
		raw, err := os.ReadFile(path)
		require.NoError(t, err)
		return raw
	}(t)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ecDER, err := x509.MarshalPKCS8PrivateKey(ec)
	require.NoError(t, err)
	for name, tt := range map[string]struct {
		content []byte
		mode    os.FileMode
		damaged bool
	}{
		"empty":            {[]byte{}, 0o600, true},
		"truncated":        {good[:len(good)/2], 0o600, true},
		"garbage":          {[]byte("not a key\n"), 0o600, true},
		"another key type": {pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: ecDER}), 0o600, true},
		"another block":    {bytes.Replace(good, []byte("PRIVATE KEY"), []byte("PUBLIC KEY"), 2), 0o600, true},
		"data after it":    {append(append([]byte{}, good...), good...), 0o600, true},
		"flipped byte":     {bytes.Replace(good, []byte("MC4CAQAw"), []byte("MC4CAQAx"), 1), 0o600, true},
		"readable by all":  {good, 0o644, false},
	} {
		t.Run(name, func(t *testing.T) {
			path := keyPath(t)
			require.NoError(t, os.WriteFile(path, tt.content, tt.mode))
			require.NoError(t, os.Chmod(path, tt.mode))
			k, created, err := badgekey.Open(path, nil)
			require.Nil(t, k)
			require.False(t, created)
			var fe *badgekey.FileError
			require.ErrorAs(t, err, &fe)
			require.Equal(t, path, fe.Path)
			require.Contains(t, err.Error(), path)
			require.Contains(t, err.Error(), "revoke this edge", "says what to do")
			require.Equal(t, tt.damaged, errors.Is(err, badgekey.ErrDamaged), "%v", err)
			after, rerr := os.ReadFile(path)
			require.NoError(t, rerr)
			require.Equal(t, tt.content, after, "the file is left as it was")
		})
	}
	t.Run("a directory", func(t *testing.T) {
		path := keyPath(t)
		require.NoError(t, os.Mkdir(path, 0o700))
		_, _, err := badgekey.Open(path, nil)
		var fe *badgekey.FileError
		require.ErrorAs(t, err, &fe)
		require.Contains(t, err.Error(), "not a regular file")
	})
}

// Sign makes a badge for the visit at the site, issued now and valid to
// the end of the site's local day, that verifies with the key's public
// half under its ID and with nothing else.
func TestKey_Sign(t *testing.T) {
	k, _, err := badgekey.Open(keyPath(t), nil)
	require.NoError(t, err)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	visit, site := ids.New(ids.Visit), ids.New(ids.Site)
	issued := time.Date(2026, 11, 21, 14, 30, 15, 500, time.UTC) // 23:30:15 in Tokyo
	tok, err := k.Sign(visit, site, issued, tokyo)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(tok, passtoken.BadgePrefix))
	c, err := passtoken.VerifyBadge(tok, passtoken.KeySet{k.ID(): k.Public()})
	require.NoError(t, err)
	require.Equal(t, visit, c.VisitID)
	require.Equal(t, site, c.SiteID)
	require.Equal(t, issued.Truncate(time.Second), c.IssuedAt)
	require.Equal(t, time.Date(2026, 11, 21, 23, 59, 59, 0, tokyo).UTC(), c.NotAfter, "the end of the day in Tokyo, not in UTC")

	other, _, err := badgekey.Open(keyPath(t), nil)
	require.NoError(t, err)
	_, err = passtoken.VerifyBadge(tok, passtoken.KeySet{k.ID(): other.Public()})
	require.ErrorIs(t, err, passtoken.ErrBadSignature)

	_, err = k.Sign(visit, site, issued, nil)
	require.Error(t, err, "no zone")
	_, err = k.Sign(site, visit, issued, tokyo)
	require.ErrorIs(t, err, passtoken.ErrInvalidClaims)
}
