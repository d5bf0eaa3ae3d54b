package edge_test

import (
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/badgekey"
	"github.com/svc-vms/svc/edge/cache"
)

// keyFile is where the App keeps its badge key: beside the cache.
func keyFile(s *site) string { return filepath.Join(filepath.Dir(s.cfg.CachePath), badgekey.FileName) }

// The App makes its badge key on its first start, beside the cache, hands
// its public half to the sync half (whose status carries it), and finds
// the same key at every start after.
func TestApp_BadgeKeyMadeOnceAndKept(t *testing.T) {
	s := newSite(t)
	var given []ed25519.PublicKey
	start := func() {
		d := s.deps()
		inner := d.NewSyncer
		d.NewSyncer = func(c *cache.Cache, badge ed25519.PublicKey) (edge.Syncer, error) {
			given = append(given, badge)
			return inner(c, badge)
		}
		app, err := edge.New(s.cfg, d)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- app.Run(ctx) }()
		select {
		case <-app.Ready():
		case err := <-done:
			t.Fatalf("Run: %v", err)
		}
		cancel()
		require.NoError(t, <-done)
	}
	start()
	st, err := os.Stat(keyFile(s))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	raw, err := os.ReadFile(keyFile(s))
	require.NoError(t, err)
	k, created, err := badgekey.Open(keyFile(s), nil)
	require.NoError(t, err)
	require.False(t, created)

	start()
	again, err := os.ReadFile(keyFile(s))
	require.NoError(t, err)
	require.Equal(t, raw, again, "a restart keeps the key file as it is")
	require.Len(t, given, 2)
	require.Equal(t, k.Public(), given[0])
	require.Equal(t, k.Public(), given[1])

	// A cache moved aside (svc-edge cache reset) leaves the key alone.
	require.NoError(t, os.Rename(s.cfg.CachePath, s.cfg.CachePath+".aside"))
	start()
	require.Equal(t, k.Public(), given[2])
}

// A damaged key file stops the start with an error that names the file
// and says what to do; the file is not replaced and no gate runs.
func TestApp_DamagedBadgeKeyStopsTheStart(t *testing.T) {
	s := newSite(t)
	require.NoError(t, mkdirFor(s.cfg.CachePath))
	require.NoError(t, os.WriteFile(keyFile(s), []byte("-----BEGIN PRIVATE KEY-----\ntruncated"), 0o600))
	app, err := edge.New(s.cfg, s.deps())
	require.NoError(t, err)
	err = app.Run(context.Background())
	var fe *badgekey.FileError
	require.ErrorAs(t, err, &fe)
	require.ErrorIs(t, err, badgekey.ErrDamaged)
	require.ErrorContains(t, err, keyFile(s))
	require.ErrorContains(t, err, "restore it from a backup")
	select {
	case <-app.Ready():
		t.Fatal("an App with a damaged badge key is not ready")
	default:
	}
	raw, err := os.ReadFile(keyFile(s))
	require.NoError(t, err)
	require.Equal(t, "-----BEGIN PRIVATE KEY-----\ntruncated", string(raw), "never replaced")
}
