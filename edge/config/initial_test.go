package config_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// TestInitial_Document: the first configuration, as enrolment writes it
// and svc-cloud edges create prints it, is one the appliance loads: a
// loopback TCP reader and a simulated relay per gate, failing secure,
// each reader and the kiosk with a comment for whoever edits the file,
// and the defaults where the appliance decides nothing.
func TestInitial_Document(t *testing.T) {
	edge := ids.New(ids.Edge)
	in := config.Initial{Site: protocol.Site{Mode: "live", OrgID: ids.New(ids.Organisation), SiteID: ids.New(ids.Site)}, EdgeID: edge,
		Broker:  config.Broker{URL: "tcp://127.0.0.1:1883", Username: edge, Password: "svc_edge_x"},
		GateIDs: []string{ids.New(ids.Gate), ids.New(ids.Gate)}, Kiosk: config.DefaultKioskListen, Language: "fr"}
	doc, err := in.Document()
	require.NoError(t, err)
	cfg, err := config.Parse(doc, config.Options{})
	require.NoError(t, err)
	require.Equal(t, in.Site, cfg.Site)
	require.Equal(t, in.Broker, cfg.Broker)
	require.Equal(t, config.DefaultDataDir, cfg.DataDir, "no data directory given: the appliance's default")
	require.Equal(t, config.DefaultListen, cfg.Listen)
	require.Equal(t, &config.Kiosk{Listen: "0.0.0.0:8088", Languages: []string{"en", "fr"}, Label: "62x100"}, cfg.Kiosk)
	require.Len(t, cfg.Gates, 2)
	for i, g := range cfg.Gates {
		require.Equal(t, in.GateIDs[i], g.ID)
		require.Equal(t, []config.Reader{{Kind: config.TCP, Listen: fmt.Sprintf("127.0.0.1:%d", config.FirstReaderPort+i)}}, g.Readers)
		require.Equal(t, fmt.Sprintf("SIM%d", config.FirstRelayPin+i), g.Relay.Pin)
		require.Equal(t, config.FailSecure, g.WhenStale)
	}

	var raw struct {
		DataDir *string `json:"data_dir"`
		Gates   []struct {
			Readers []map[string]string `json:"readers"`
		} `json:"gates"`
		Kiosk map[string]any `json:"kiosk"`
	}
	require.NoError(t, json.Unmarshal(doc, &raw))
	require.Nil(t, raw.DataDir, "no empty data_dir written")
	for _, g := range raw.Gates {
		require.Contains(t, g.Readers[0][config.CommentKey], "To take passes from a reader on the LAN")
	}
	require.Contains(t, raw.Kiosk[config.CommentKey], "pair with a code from svc-edge kiosk pair")

	in.Kiosk, in.DataDir = "", "/srv/svc-edge"
	doc, err = in.Document()
	require.NoError(t, err)
	cfg, err = config.Parse(doc, config.Options{})
	require.NoError(t, err)
	require.Nil(t, cfg.Kiosk, "no kiosk")
	require.Equal(t, "/srv/svc-edge", cfg.DataDir)
}

func TestKioskLanguages(t *testing.T) {
	require.Equal(t, []string{"en"}, config.KioskLanguages(""))
	require.Equal(t, []string{"en"}, config.KioskLanguages("en"))
	require.Equal(t, []string{"en", "fr"}, config.KioskLanguages("fr"))
}
