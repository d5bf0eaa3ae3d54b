package dynsec_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker/dynsec"
	"github.com/svc-vms/svc/sync/broker/dynsec/dynsectest"
	"github.com/svc-vms/svc/sync/mqttsync/mqtttest"
	"github.com/svc-vms/svc/sync/protocol"
)

func newSite() protocol.Site {
	return protocol.Site{Mode: "test", OrgID: ids.New(ids.Organisation), SiteID: ids.New(ids.Site)}
}

func newControl(t *testing.T, b *dynsectest.Broker) *dynsec.Control {
	t.Helper()
	c, err := dynsec.New(dynsec.Config{BrokerURL: b.URL, Username: dynsectest.Admin, Password: b.AdminPassword})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// TestPutEdge_Rights gives two edges of a site and one of another site
// their accounts, and the cloud its own, and checks that an edge may do
// exactly what the embedded broker lets it (sync/broker's Access): its
// own facts, resync and status topics to write, its site's changes and
// its own replies to read, nothing of another edge or site, no wildcard
// and no $share filter, and only under its own client ID; on the plugin's
// default ACL access and on one that allows everything.
func TestPutEdge_Rights(t *testing.T) {
	for name, start := range map[string]func(testing.TB) *dynsectest.Broker{"default": dynsectest.Start, "open": dynsectest.StartOpen} {
		t.Run(name, func(t *testing.T) { testRights(t, start(t)) })
	}
}

func testRights(t *testing.T, b *dynsectest.Broker) {
	ctl := newControl(t, b)
	ctx := t.Context()
	site, other := newSite(), newSite()
	edge, sameSite, elsewhere := ids.New(ids.Edge), ids.New(ids.Edge), ids.New(ids.Edge)
	now := time.Now()
	require.NoError(t, ctl.PutEdge(ctx, site, edge, "pw-"+edge, now))
	require.NoError(t, ctl.PutEdge(ctx, site, sameSite, "pw-"+sameSite, now))
	require.NoError(t, ctl.PutEdge(ctx, other, elsewhere, "pw-"+elsewhere, now))
	require.NoError(t, ctl.PutCloud(ctx, "svc-cloud-1", "cloud-pw"))

	_, err := dynsectest.Dial(t, b.URL, dynsectest.DialOptions{Username: edge, Password: "wrong", ClientID: edge})
	require.Error(t, err, "a wrong password is refused")
	_, err = dynsectest.Dial(t, b.URL, dynsectest.DialOptions{Username: edge, Password: "pw-" + edge, ClientID: sameSite})
	require.Error(t, err, "another client ID than the edge's is refused")
	_, err = dynsectest.Dial(t, b.URL, dynsectest.DialOptions{Username: "nobody", Password: "x", ClientID: "x"})
	require.Error(t, err, "an unknown user is refused")

	cloud := dynsectest.MustDial(t, b.URL, dynsectest.DialOptions{Username: "svc-cloud-1", Password: "cloud-pw", ClientID: "svc-cloud-1-x"})
	for _, f := range []string{protocol.SharedFacts, protocol.SharedResync, protocol.SharedStatus, "$share/svc-cloud-7f3a/" + protocol.Root + "/+/+/sites/+/edges/+/facts"} {
		require.Equal(t, byte(1), cloud.Sub(t, f), "the cloud may subscribe to %s", f)
	}

	e := dynsectest.MustDial(t, b.URL, dynsectest.DialOptions{Username: edge, Password: "pw-" + edge, ClientID: edge})
	require.Equal(t, byte(1), e.Sub(t, site.Changes()))
	require.Equal(t, byte(1), e.Sub(t, site.Replies(edge)))
	for _, f := range []string{other.Changes(), site.Replies(sameSite), site.EdgeFilter(), protocol.Root + "/#", "#",
		protocol.SharedFacts, "$share/g/" + site.Changes(), site.Facts(edge)} {
		assert.Equal(t, byte(0x80), e.Sub(t, f), "an edge may not subscribe to %s", f)
	}

	// Mosquitto acknowledges a refused publication and drops it: only the
	// edge's own facts reach the cloud, and the sentinel sent after them
	// arrives next.
	for _, topic := range []string{other.Facts(edge), site.Facts(sameSite), site.Changes(), site.Replies(edge), protocol.Root + "/x"} {
		e.Pub(t, topic, "forged")
	}
	e.Pub(t, site.Facts(edge), "own facts")
	e.Pub(t, site.Resync(edge), "own resync")
	e.Pub(t, site.Status(edge), "own status")
	for _, want := range []struct{ topic, payload string }{{site.Facts(edge), "own facts"}, {site.Resync(edge), "own resync"}, {site.Status(edge), "own status"}} {
		m := cloud.Next(t)
		assert.Equal(t, want.topic, m.Topic())
		assert.Equal(t, want.payload, string(m.Payload()))
	}
	cloud.Pub(t, site.Facts(edge), "sentinel")
	assert.Equal(t, "sentinel", string(cloud.Next(t).Payload()), "no forged message reached the cloud")

	// The cloud's messages reach the edge on its site's feed and its own
	// replies only.
	cloud.Pub(t, other.Changes(), "other site's feed")
	cloud.Pub(t, site.Replies(sameSite), "other edge's reply")
	cloud.Pub(t, site.Changes(), "feed")
	cloud.Pub(t, site.Replies(edge), "reply")
	assert.Equal(t, "feed", string(e.Next(t).Payload()))
	assert.Equal(t, "reply", string(e.Next(t).Payload()))

	// A last will on another edge's status is not published when the
	// connection drops; one on the edge's own status is.
	for _, will := range []string{site.Status(edge), site.Status(sameSite)} {
		p := mqtttest.NewProxy(t, b.URL)
		w := dynsectest.MustDial(t, p.URL(), dynsectest.DialOptions{Username: sameSite, Password: "pw-" + sameSite, ClientID: sameSite, WillTopic: will})
		p.Cut() // no DISCONNECT: the broker sends the will, if the edge may
		w.WaitLost(t)
	}
	m := cloud.Next(t)
	assert.Equal(t, site.Status(sameSite), m.Topic(), "the permitted will, not the forged one")
	assert.Equal(t, "will", string(m.Payload()))
}

// TestDisableClient_Disconnects disables a connected edge's account: it is
// disconnected at once, its credentials are refused, and PutEdge (a new
// password) does not enable it again.
func TestDisableClient_Disconnects(t *testing.T) {
	b := dynsectest.Start(t)
	ctl := newControl(t, b)
	ctx := t.Context()
	site, edge := newSite(), ids.New(ids.Edge)
	require.NoError(t, ctl.PutEdge(ctx, site, edge, "pw", time.Now()))
	e := dynsectest.MustDial(t, b.URL, dynsectest.DialOptions{Username: edge, Password: "pw", ClientID: edge})

	require.NoError(t, ctl.DisableClient(ctx, edge))
	e.WaitLost(t)
	_, err := dynsectest.Dial(t, b.URL, dynsectest.DialOptions{Username: edge, Password: "pw", ClientID: edge})
	require.Error(t, err, "a disabled client is refused")
	require.NoError(t, ctl.DisableClient(ctx, edge), "disabling twice changes nothing")

	require.NoError(t, ctl.PutEdge(ctx, site, edge, "pw2", time.Now()))
	_, err = dynsectest.Dial(t, b.URL, dynsectest.DialOptions{Username: edge, Password: "pw2", ClientID: edge})
	require.Error(t, err, "a new password does not enable a disabled client")
	clients, err := ctl.ListClients(ctx)
	require.NoError(t, err)
	found := false
	for _, c := range clients {
		if c.Username == edge {
			found = true
			assert.True(t, c.Disabled)
		}
	}
	require.True(t, found)

	require.ErrorIs(t, ctl.DisableClient(ctx, ids.New(ids.Edge)), dynsec.ErrNotFound)
}

// TestDeleteEdge_Disconnects deletes a connected edge's account: it is
// disconnected at once and refused; deleting again is ErrNotFound.
func TestDeleteEdge_Disconnects(t *testing.T) {
	b := dynsectest.Start(t)
	ctl := newControl(t, b)
	ctx := t.Context()
	site, edge := newSite(), ids.New(ids.Edge)
	require.NoError(t, ctl.PutEdge(ctx, site, edge, "pw", time.Now()))
	e := dynsectest.MustDial(t, b.URL, dynsectest.DialOptions{Username: edge, Password: "pw", ClientID: edge})

	require.NoError(t, ctl.DeleteEdge(ctx, edge))
	e.WaitLost(t)
	_, err := dynsectest.Dial(t, b.URL, dynsectest.DialOptions{Username: edge, Password: "pw", ClientID: edge})
	require.Error(t, err)
	require.ErrorIs(t, ctl.DeleteEdge(ctx, edge), dynsec.ErrNotFound)
	clients, err := ctl.ListClients(ctx)
	require.NoError(t, err)
	for _, c := range clients {
		require.NotEqual(t, edge, c.Username)
	}
}

// TestPutEdge_NewPassword: putting an edge again (each enrolment poll mints
// a password) replaces its Password: the old one is refused.
func TestPutEdge_NewPassword(t *testing.T) {
	b := dynsectest.Start(t)
	ctl := newControl(t, b)
	ctx := t.Context()
	site, edge := newSite(), ids.New(ids.Edge)
	made := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, ctl.PutEdge(ctx, site, edge, "first", made))
	require.NoError(t, ctl.PutEdge(ctx, site, edge, "second", made.Add(time.Hour)))
	_, err := dynsectest.Dial(t, b.URL, dynsectest.DialOptions{Username: edge, Password: "first", ClientID: edge})
	require.Error(t, err)
	e := dynsectest.MustDial(t, b.URL, dynsectest.DialOptions{Username: edge, Password: "second", ClientID: edge})
	require.Equal(t, byte(1), e.Sub(t, site.Changes()), "its rights are kept")

	clients, err := ctl.ListClients(ctx)
	require.NoError(t, err)
	var got dynsec.Client
	for _, c := range clients {
		if c.Username == edge {
			got = c
		}
	}
	require.Equal(t, edge, got.Username)
	at, ok := got.Made()
	require.True(t, ok)
	require.True(t, made.Equal(at), "made when first put: %s", at)
	require.Equal(t, []string{edge}, got.Roles)
	require.Equal(t, edge, got.ClientID)
	require.False(t, got.Disabled)
}

// TestPutCloud_KeepsConnections: the cloud's account is made once; putting
// it again (every cloud process does at its start) neither disconnects a
// cloud process using it nor changes its password.
func TestPutCloud_KeepsConnections(t *testing.T) {
	b := dynsectest.Start(t)
	ctl := newControl(t, b)
	ctx := t.Context()
	require.NoError(t, ctl.PutCloud(ctx, "svc-cloud", "pw"))
	c := dynsectest.MustDial(t, b.URL, dynsectest.DialOptions{Username: "svc-cloud", Password: "pw", ClientID: "svc-cloud-a"})
	require.NoError(t, ctl.PutCloud(ctx, "svc-cloud", "another"))
	select {
	case <-c.Lost():
		t.Fatal("putting the cloud's account again disconnected it")
	default:
	}
	require.True(t, c.IsConnectionOpen())
	_, err := dynsectest.Dial(t, b.URL, dynsectest.DialOptions{Username: "svc-cloud", Password: "pw", ClientID: "svc-cloud-b"})
	require.NoError(t, err, "the first password stays")
	require.Equal(t, byte(1), c.Sub(t, protocol.SharedFacts))
}

// TestControl_Unavailable: with the broker down a request fails at once
// with ErrUnavailable, and works again when it is back; a wrong admin
// password is ErrUnavailable too, naming the refusal.
func TestControl_Unavailable(t *testing.T) {
	b := dynsectest.Start(t)
	ctl := newControl(t, b)
	ctx := t.Context()
	site := newSite()
	require.NoError(t, ctl.PutEdge(ctx, site, ids.New(ids.Edge), "pw", time.Now()))
	b.Stop()
	err := ctl.PutEdge(ctx, site, ids.New(ids.Edge), "pw", time.Now())
	require.ErrorIs(t, err, dynsec.ErrUnavailable)
	b.Start()
	require.NoError(t, ctl.PutEdge(ctx, site, ids.New(ids.Edge), "pw", time.Now()), "a new connection once the broker is back")

	bad, err := dynsec.New(dynsec.Config{BrokerURL: b.URL, Username: dynsectest.Admin, Password: "wrong", Timeout: dynsectest.Wait})
	require.NoError(t, err)
	defer bad.Close()
	_, err = bad.ListClients(ctx)
	require.ErrorIs(t, err, dynsec.ErrUnavailable)
	require.ErrorContains(t, err, "ot Authorized")
}

// TestConfig_Validate names the bad field.
func TestConfig_Validate(t *testing.T) {
	for _, c := range []struct {
		cfg  dynsec.Config
		want string
	}{
		{dynsec.Config{BrokerURL: "", Username: "a"}, "BrokerURL"},
		{dynsec.Config{BrokerURL: "http://x:1", Username: "a"}, "BrokerURL"},
		{dynsec.Config{BrokerURL: "tcp://127.0.0.1:1883"}, "Username"},
		{dynsec.Config{BrokerURL: "tcp://127.0.0.1:1883", Username: "a", Timeout: -1}, "Timeout"},
	} {
		_, err := dynsec.New(c.cfg)
		require.ErrorIs(t, err, dynsec.ErrConfig)
		require.ErrorContains(t, err, c.want)
	}
}
