package dynsec_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker/dynsec"
	"github.com/svc-vms/svc/sync/broker/dynsec/dynsectest"
	"github.com/svc-vms/svc/sync/mqttsync/mqtttest"
	"github.com/svc-vms/svc/sync/protocol"
)

// wait bounds every wait for the broker.
const wait = 10 * time.Second

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

// client is an MQTT connection of a test, with what it receives and
// whether the broker closed it.
type client struct {
	paho.Client
	msgs chan paho.Message
	lost chan struct{}
}

type dialOpts struct {
	user, password, clientID string
	willTopic                string
}

func dial(t *testing.T, url string, o dialOpts) (*client, error) {
	t.Helper()
	c := &client{msgs: make(chan paho.Message, 100), lost: make(chan struct{})}
	opts := paho.NewClientOptions().AddBroker(url).SetClientID(o.clientID).SetUsername(o.user).SetPassword(o.password).
		SetProtocolVersion(4).SetCleanSession(true).SetAutoReconnect(false).SetConnectRetry(false).
		SetConnectTimeout(wait).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) { c.msgs <- m }).
		SetConnectionLostHandler(func(paho.Client, error) { close(c.lost) })
	if o.willTopic != "" {
		opts.SetWill(o.willTopic, "will", 1, false)
	}
	c.Client = paho.NewClient(opts)
	tok := c.Connect()
	if !tok.WaitTimeout(wait) {
		return nil, errors.New("no CONNACK")
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Disconnect(0) })
	return c, nil
}

func mustDial(t *testing.T, url string, o dialOpts) *client {
	t.Helper()
	c, err := dial(t, url, o)
	require.NoError(t, err)
	return c
}

// subscribe returns the SUBACK's return code for filter.
func (c *client) subscribe(t *testing.T, filter string) byte {
	t.Helper()
	tok := c.Subscribe(filter, 1, nil)
	require.True(t, tok.WaitTimeout(wait))
	require.NoError(t, tok.Error())
	key := filter
	if rest, ok := strings.CutPrefix(filter, "$share/"); ok {
		_, key, _ = strings.Cut(rest, "/") // paho's Subscribe keys its result so
	}
	return tok.(*paho.SubscribeToken).Result()[key]
}

func (c *client) publish(t *testing.T, topic, payload string) {
	t.Helper()
	tok := c.Publish(topic, 1, false, payload)
	require.True(t, tok.WaitTimeout(wait))
	require.NoError(t, tok.Error())
}

func (c *client) next(t *testing.T) paho.Message {
	t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case <-time.After(wait):
		t.Fatal("no message")
		return nil
	}
}

// waitLost waits until the broker has closed c.
func (c *client) waitLost(t *testing.T) {
	t.Helper()
	select {
	case <-c.lost:
	case <-time.After(wait):
		t.Fatal("the broker did not disconnect the client")
	}
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

	_, err := dial(t, b.URL, dialOpts{user: edge, password: "wrong", clientID: edge})
	require.Error(t, err, "a wrong password is refused")
	_, err = dial(t, b.URL, dialOpts{user: edge, password: "pw-" + edge, clientID: sameSite})
	require.Error(t, err, "another client ID than the edge's is refused")
	_, err = dial(t, b.URL, dialOpts{user: "nobody", password: "x", clientID: "x"})
	require.Error(t, err, "an unknown user is refused")

	cloud := mustDial(t, b.URL, dialOpts{user: "svc-cloud-1", password: "cloud-pw", clientID: "svc-cloud-1-x"})
	for _, f := range []string{protocol.SharedFacts, protocol.SharedResync, protocol.SharedStatus, "$share/svc-cloud-7f3a/" + protocol.Root + "/+/+/sites/+/edges/+/facts"} {
		require.Equal(t, byte(1), cloud.subscribe(t, f), "the cloud may subscribe to %s", f)
	}

	e := mustDial(t, b.URL, dialOpts{user: edge, password: "pw-" + edge, clientID: edge})
	require.Equal(t, byte(1), e.subscribe(t, site.Changes()))
	require.Equal(t, byte(1), e.subscribe(t, site.Replies(edge)))
	for _, f := range []string{other.Changes(), site.Replies(sameSite), site.EdgeFilter(), protocol.Root + "/#", "#",
		protocol.SharedFacts, "$share/g/" + site.Changes(), site.Facts(edge)} {
		assert.Equal(t, byte(0x80), e.subscribe(t, f), "an edge may not subscribe to %s", f)
	}

	// Mosquitto acknowledges a refused publication and drops it: only the
	// edge's own facts reach the cloud, and the sentinel sent after them
	// arrives next.
	for _, topic := range []string{other.Facts(edge), site.Facts(sameSite), site.Changes(), site.Replies(edge), protocol.Root + "/x"} {
		e.publish(t, topic, "forged")
	}
	e.publish(t, site.Facts(edge), "own facts")
	e.publish(t, site.Resync(edge), "own resync")
	e.publish(t, site.Status(edge), "own status")
	for _, want := range []struct{ topic, payload string }{{site.Facts(edge), "own facts"}, {site.Resync(edge), "own resync"}, {site.Status(edge), "own status"}} {
		m := cloud.next(t)
		assert.Equal(t, want.topic, m.Topic())
		assert.Equal(t, want.payload, string(m.Payload()))
	}
	cloud.publish(t, site.Facts(edge), "sentinel")
	assert.Equal(t, "sentinel", string(cloud.next(t).Payload()), "no forged message reached the cloud")

	// The cloud's messages reach the edge on its site's feed and its own
	// replies only.
	cloud.publish(t, other.Changes(), "other site's feed")
	cloud.publish(t, site.Replies(sameSite), "other edge's reply")
	cloud.publish(t, site.Changes(), "feed")
	cloud.publish(t, site.Replies(edge), "reply")
	assert.Equal(t, "feed", string(e.next(t).Payload()))
	assert.Equal(t, "reply", string(e.next(t).Payload()))

	// A last will on another edge's status is not published when the
	// connection drops; one on the edge's own status is.
	for _, will := range []string{site.Status(edge), site.Status(sameSite)} {
		p := mqtttest.NewProxy(t, b.URL)
		w := mustDial(t, p.URL(), dialOpts{user: sameSite, password: "pw-" + sameSite, clientID: sameSite, willTopic: will})
		p.Cut() // no DISCONNECT: the broker sends the will, if the edge may
		w.waitLost(t)
	}
	m := cloud.next(t)
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
	e := mustDial(t, b.URL, dialOpts{user: edge, password: "pw", clientID: edge})

	require.NoError(t, ctl.DisableClient(ctx, edge))
	e.waitLost(t)
	_, err := dial(t, b.URL, dialOpts{user: edge, password: "pw", clientID: edge})
	require.Error(t, err, "a disabled client is refused")
	require.NoError(t, ctl.DisableClient(ctx, edge), "disabling twice changes nothing")

	require.NoError(t, ctl.PutEdge(ctx, site, edge, "pw2", time.Now()))
	_, err = dial(t, b.URL, dialOpts{user: edge, password: "pw2", clientID: edge})
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
	e := mustDial(t, b.URL, dialOpts{user: edge, password: "pw", clientID: edge})

	require.NoError(t, ctl.DeleteEdge(ctx, edge))
	e.waitLost(t)
	_, err := dial(t, b.URL, dialOpts{user: edge, password: "pw", clientID: edge})
	require.Error(t, err)
	require.ErrorIs(t, ctl.DeleteEdge(ctx, edge), dynsec.ErrNotFound)
	clients, err := ctl.ListClients(ctx)
	require.NoError(t, err)
	for _, c := range clients {
		require.NotEqual(t, edge, c.Username)
	}
}

// TestPutEdge_NewPassword: putting an edge again (each enrolment poll mints
// a password) replaces its password: the old one is refused.
func TestPutEdge_NewPassword(t *testing.T) {
	b := dynsectest.Start(t)
	ctl := newControl(t, b)
	ctx := t.Context()
	site, edge := newSite(), ids.New(ids.Edge)
	made := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	require.NoError(t, ctl.PutEdge(ctx, site, edge, "first", made))
	require.NoError(t, ctl.PutEdge(ctx, site, edge, "second", made.Add(time.Hour)))
	_, err := dial(t, b.URL, dialOpts{user: edge, password: "first", clientID: edge})
	require.Error(t, err)
	e := mustDial(t, b.URL, dialOpts{user: edge, password: "second", clientID: edge})
	require.Equal(t, byte(1), e.subscribe(t, site.Changes()), "its rights are kept")

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
	c := mustDial(t, b.URL, dialOpts{user: "svc-cloud", password: "pw", clientID: "svc-cloud-a"})
	require.NoError(t, ctl.PutCloud(ctx, "svc-cloud", "another"))
	select {
	case <-c.lost:
		t.Fatal("putting the cloud's account again disconnected it")
	default:
	}
	require.True(t, c.IsConnectionOpen())
	_, err := dial(t, b.URL, dialOpts{user: "svc-cloud", password: "pw", clientID: "svc-cloud-b"})
	require.NoError(t, err, "the first password stays")
	require.Equal(t, byte(1), c.subscribe(t, protocol.SharedFacts))
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

	bad, err := dynsec.New(dynsec.Config{BrokerURL: b.URL, Username: dynsectest.Admin, Password: "wrong", Timeout: wait})
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
