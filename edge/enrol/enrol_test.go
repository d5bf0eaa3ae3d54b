package enrol_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/edge/enrol"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/keyfile"
	"github.com/svc-vms/svc/sync/protocol"
)

// The identity key is made once (0600) and kept; a damaged file is an
// error naming it and what to do, and is left as it was.
func TestIdentity_MadeOnceDamagedNeverReplaced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	k, created, err := enrol.Identity(dir)
	require.NoError(t, err)
	require.True(t, created)
	again, created, err := enrol.Identity(dir)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, k, again)
	fi, err := os.Stat(filepath.Join(dir, enrol.KeyFileName))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	path := filepath.Join(dir, enrol.KeyFileName)
	require.NoError(t, os.WriteFile(path, []byte("not a key\n"), 0o600))
	_, _, err = enrol.Identity(dir)
	var ke *enrol.KeyError
	require.ErrorAs(t, err, &ke)
	require.ErrorIs(t, err, keyfile.ErrDamaged)
	require.Contains(t, err.Error(), path)
	require.Contains(t, err.Error(), "revoke")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "not a key\n", string(raw), "left as it was")
}

// The first configuration is one the appliance loads, private, and never
// written over an existing file; a site without gates is refused.
func TestWriteConfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	r := enrol.Result{EdgeID: ids.New(ids.Edge),
		Site:   protocol.Site{Mode: "test", OrgID: ids.New(ids.Organisation), SiteID: ids.New(ids.Site)},
		Broker: config.Broker{URL: "ssl://mqtt.example.com:8883", Password: "svc_edge_x"},
		Gates:  []enrol.Gate{{ID: ids.New(ids.Gate)}, {ID: ids.New(ids.Gate)}}}
	r.Broker.Username = r.EdgeID
	require.ErrorContains(t, enrol.WriteConfig(path, enrol.Result{Site: r.Site}, enrol.Local{DataDir: dir}), "no gates")
	require.NoError(t, enrol.WriteConfig(path, r, enrol.Local{DataDir: dir, Kiosk: "127.0.0.1:8088", Language: "fr", ReaderPort: 9500}))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	cfg, err := config.Load(path)
	require.NoError(t, err)
	require.Equal(t, r.Site, cfg.Site)
	require.Equal(t, r.Broker.Password, cfg.Broker.Password)
	require.Equal(t, dir, cfg.DataDir)
	require.Len(t, cfg.Gates, 2)
	require.Equal(t, "127.0.0.1:9501", cfg.Gates[1].Readers[0].Listen)
	require.Equal(t, []string{"en", "fr"}, cfg.Kiosk.Languages)
	require.ErrorIs(t, enrol.WriteConfig(path, r, enrol.Local{DataDir: dir}), fs.ErrExist, "never over a file")
}
