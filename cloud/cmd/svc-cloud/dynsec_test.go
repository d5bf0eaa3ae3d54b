package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/sync/broker/dynsec"
	"github.com/svc-vms/svc/sync/broker/dynsec/dynsectest"
)

// TestEdges_CreateAndRevokeOnMosquitto: with the dynamic security
// plugin's admin, edges create makes the edge's account at Mosquitto (its
// printed credentials connect), or fails and makes no edge while
// Mosquitto is down; edges revoke disables the account at once and
// disconnects the edge, or, while Mosquitto is down, says it could not and
// leaves the account for serve's reconcile loop (edgesync's
// TestReconciler_RevokedWhileDown).
func TestEdges_CreateAndRevokeOnMosquitto(t *testing.T) {
	b := dynsectest.Start(t)
	dir := t.TempDir()
	var seed seedOutput
	require.NoError(t, json.Unmarshal([]byte(runCLI(t, "seed", "--data", dir, "--json")), &seed))
	site := seed.Test.Sites[0]
	broker := []string{"--mqtt-url", b.URL, "--mqtt-dynsec-username", dynsectest.Admin, "--mqtt-dynsec-password", b.AdminPassword}
	tenant := []string{"--data", dir, "--org", seed.OrganisationID, "--mode", "test"}
	create := func() (cloud.Edge, string, error) {
		var out bytes.Buffer
		args := append(append([]string{"edges", "create", "--site", site.ID, "--broker", b.URL, "--json"}, tenant...), broker...)
		err := run(context.Background(), args, &out, os.Stderr)
		var created struct {
			ID       string `json:"id"`
			Username string `json:"username"`
			Password string `json:"password"`
		}
		if err == nil {
			require.NoError(t, json.Unmarshal(out.Bytes(), &created))
		}
		return cloud.Edge{ID: created.ID, Username: created.Username}, created.Password, err
	}
	revoke := func(id string) string {
		return runCLI(t, append(append([]string{"edges", "revoke", "--edge-id", id}, tenant...), broker...)...)
	}
	opts := func(e cloud.Edge, pw string) dynsectest.DialOptions {
		return dynsectest.DialOptions{Username: e.Username, Password: pw, ClientID: e.ID}
	}

	b.Stop()
	_, _, err := create()
	require.ErrorIs(t, err, cloud.ErrBrokerUnavailable)
	require.NotContains(t, runCLI(t, append([]string{"edges", "list", "--site", site.ID}, tenant...)...), "edge_", "no edge was made")
	b.Start()

	e, pw, err := create()
	require.NoError(t, err)
	c := dynsectest.MustDial(t, b.URL, opts(e, pw))
	require.Contains(t, revoke(e.ID), "Mosquitto disabled its account and disconnected it")
	c.WaitLost(t)
	_, err = dynsectest.Dial(t, b.URL, opts(e, pw))
	require.Error(t, err)

	e, pw, err = create()
	require.NoError(t, err, "the site takes a new appliance")
	dynsectest.MustDial(t, b.URL, opts(e, pw))
	b.Stop()
	require.Contains(t, revoke(e.ID), "could not be disabled now")
	b.Start()
	_, err = dynsectest.Dial(t, b.URL, opts(e, pw))
	require.NoError(t, err, "Mosquitto has not heard of the revocation yet")
	ctl, err := dynsec.New(dynsec.Config{BrokerURL: b.URL, Username: dynsectest.Admin, Password: b.AdminPassword})
	require.NoError(t, err)
	defer ctl.Close()
	require.False(t, disabled(t, ctl, e.ID))
}
