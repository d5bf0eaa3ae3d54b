package broker_test

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/protocol"
)

func newSite() protocol.Site {
	return protocol.Site{Mode: "live", OrgID: ids.New(ids.Organisation), SiteID: ids.New(ids.Site)}
}

func TestAccess_Rules(t *testing.T) {
	site, other := newSite(), newSite()
	edge, otherEdge := ids.New(ids.Edge), ids.New(ids.Edge)
	e := broker.Access{Site: site, EdgeID: edge}
	cloud := broker.Access{Cloud: true}

	tests := []struct {
		name     string
		acc      broker.Access
		topic    string
		pub, sub bool
	}{
		{"edge own facts", e, site.Facts(edge), true, false},
		{"edge another edge's facts", e, site.Facts(otherEdge), false, false},
		{"edge the old site-wide facts topic", e, site.Prefix() + "/facts", false, false},
		{"edge own resync", e, site.Resync(edge), true, false},
		{"edge own status", e, site.Status(edge), true, false},
		{"edge changes", e, site.Changes(), false, true},
		{"edge own replies", e, site.Replies(edge), false, true},
		{"edge another site's facts", e, other.Facts(edge), false, false},
		{"edge another site's changes", e, other.Changes(), false, false},
		{"edge another edge's replies", e, site.Replies(otherEdge), false, false},
		{"edge another edge's status", e, site.Status(otherEdge), false, false},
		{"edge another edge's resync", e, site.Resync(otherEdge), false, false},
		{"edge site wildcard", e, site.EdgeFilter(), false, false},
		{"edge single-level wildcard", e, site.Prefix() + "/edges/+/replies", false, false},
		{"edge shared facts", e, protocol.SharedFacts, false, false},
		{"edge everything", e, "#", false, false},
		{"edge $SYS", e, "$SYS/#", false, false},
		{"cloud changes", cloud, site.Changes(), true, true},
		{"cloud replies", cloud, site.Replies(edge), true, true},
		{"cloud shared facts", cloud, protocol.SharedFacts, false, true},
		{"cloud shared resync", cloud, protocol.SharedResync, false, true},
		{"cloud shared status", cloud, protocol.SharedStatus, false, true},
		{"cloud root wildcard", cloud, protocol.Root + "/#", true, true},
		{"cloud outside root", cloud, "other/topic", false, false},
		{"cloud root lookalike", cloud, protocol.Root + "x/a", false, false},
		{"cloud share without group", cloud, "$share//" + protocol.Root + "/#", false, false},
		{"cloud share outside root", cloud, "$share/g/#", false, false},
		{"cloud everything", cloud, "#", false, false},
		{"no access", broker.Access{}, site.Facts(edge), false, false},
		{"edge of an invalid site", broker.Access{Site: protocol.Site{Mode: "live"}, EdgeID: edge}, "svc/v1/live//sites//facts", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.pub, tt.acc.MayPublish(tt.topic), "MayPublish(%s)", tt.topic)
			assert.Equal(t, tt.sub, tt.acc.MaySubscribe(tt.topic), "MaySubscribe(%s)", tt.topic)
		})
	}
}

func TestConfig_Validate(t *testing.T) {
	auth := broker.AuthenticatorFunc(func(context.Context, string, string) (broker.Access, error) { return broker.Access{}, nil })
	for _, tt := range []struct {
		name string
		cfg  broker.Config
	}{
		{"no address", broker.Config{Auth: auth}},
		{"no authenticator", broker.Config{Listen: "127.0.0.1:0"}},
		{"negative timeout", broker.Config{Listen: "127.0.0.1:0", Auth: auth, AuthTimeout: -1}},
		{"plain on every interface", broker.Config{Listen: "0.0.0.0:0", Auth: auth}},
		{"plain on every interface, no host", broker.Config{Listen: ":0", Auth: auth}},
		{"plain on every IPv6 interface", broker.Config{Listen: "[::]:0", Auth: auth}},
		{"plain on a LAN address", broker.Config{Listen: "192.0.2.10:1884", Auth: auth}},
		{"plain on a name", broker.Config{Listen: "broker.example.com:1884", Auth: auth}},
		{"TLS without a certificate", broker.Config{TLSListen: "127.0.0.1:0", Auth: auth}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := broker.New(tt.cfg)
			require.ErrorIs(t, err, broker.ErrConfig)
		})
	}
	_, err := broker.New(broker.Config{Listen: "127.0.0.1:1", TLSListen: "256.0.0.1:1", TLS: &tls.Config{GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return nil, nil }}, Auth: auth})
	require.Error(t, err, "an address that cannot be bound")
	require.NotErrorIs(t, err, broker.ErrConfig)
	_, err = broker.New(broker.Config{Listen: "0.0.0.0:0", Auth: auth})
	require.ErrorContains(t, err, "loopback", "the error says why")
}

// users is a test Authenticator.
type users map[string]broker.Access

func (u users) Authenticate(_ context.Context, user, pass string) (broker.Access, error) {
	acc, ok := u[user]
	if !ok || pass != "secret-"+user {
		return broker.Access{}, errors.New("unknown credentials")
	}
	return acc, nil
}

// start runs a broker until the test ends.
func start(t *testing.T, auth broker.Authenticator) *broker.Broker {
	t.Helper()
	b, err := broker.New(broker.Config{Listen: "127.0.0.1:0", Auth: auth, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return b
}

// client is a connected paho client, its messages and whether the
// connection was lost.
type client struct {
	paho.Client
	msgs chan paho.Message
	lost chan struct{}
}

type connOpts struct {
	clientID, user, will string
	wrongPassword        bool
	conn                 *net.Conn // set to the connection's socket
}

func dial(t *testing.T, b *broker.Broker, o connOpts) (*client, error) {
	t.Helper()
	return dialAddr(t, b.Addr(), o)
}

func dialAddr(t *testing.T, addr string, o connOpts) (*client, error) {
	t.Helper()
	c := &client{msgs: make(chan paho.Message, 100), lost: make(chan struct{})}
	pass := "secret-" + o.user
	if o.wrongPassword {
		pass = "wrong"
	}
	opts := paho.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(o.clientID).
		SetUsername(o.user).SetPassword(pass).SetProtocolVersion(4).SetAutoReconnect(false).
		SetConnectTimeout(5 * time.Second).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) { c.msgs <- m }).
		SetConnectionLostHandler(func(paho.Client, error) { close(c.lost) })
	if o.will != "" {
		opts.SetWill(o.will, "offline", 1, true)
	}
	if o.conn != nil {
		// The test keeps the socket, to drop it without a DISCONNECT.
		opts.SetCustomOpenConnectionFn(func(u *url.URL, _ paho.ClientOptions) (net.Conn, error) {
			c, err := net.Dial("tcp", u.Host)
			*o.conn = c
			return c, err
		})
	}
	c.Client = paho.NewClient(opts)
	tok := c.Connect()
	require.True(t, tok.WaitTimeout(5*time.Second))
	if err := tok.Error(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Disconnect(0) })
	return c, nil
}

func mustDial(t *testing.T, b *broker.Broker, o connOpts) *client {
	t.Helper()
	c, err := dial(t, b, o)
	require.NoError(t, err)
	return c
}

// subscribe returns the SUBACK code of filter (0x80 when refused).
func (c *client) subscribe(t *testing.T, filter string) byte {
	t.Helper()
	// SubscribeMultiple keys its result by the filter as sent (Subscribe
	// strips a $share prefix).
	tok := c.SubscribeMultiple(map[string]byte{filter: 1}, nil)
	require.True(t, tok.WaitTimeout(5*time.Second))
	require.NoError(t, tok.Error())
	code, ok := tok.(*paho.SubscribeToken).Result()[filter]
	require.True(t, ok, "a SUBACK code for %s", filter)
	return code
}

func (c *client) publish(t *testing.T, topic, payload string) {
	t.Helper()
	tok := c.Publish(topic, 1, false, payload)
	require.True(t, tok.WaitTimeout(5*time.Second))
	require.NoError(t, tok.Error())
}

// next is the next message c receives.
func (c *client) next(t *testing.T) paho.Message {
	t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case <-time.After(5 * time.Second):
		t.Fatal("no message")
		return nil
	}
}

type fixture struct {
	b          *broker.Broker
	site       protocol.Site
	edge       string
	otherSite  protocol.Site
	otherEdge  string
	cloudUser  string
	edgeUser   string
	otherUser  string
	sameSite   string // an edge of site other than edge
	sameSiteID string
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{
		site: newSite(), edge: ids.New(ids.Edge), otherSite: newSite(), otherEdge: ids.New(ids.Edge),
		cloudUser: "svc-cloud", edgeUser: "edge-a", otherUser: "edge-b", sameSite: "edge-c", sameSiteID: ids.New(ids.Edge),
	}
	f.b = start(t, users{
		f.cloudUser: {Cloud: true},
		f.edgeUser:  {Site: f.site, EdgeID: f.edge},
		f.otherUser: {Site: f.otherSite, EdgeID: f.otherEdge},
		f.sameSite:  {Site: f.site, EdgeID: f.sameSiteID},
		"broken":    {EdgeID: "not-an-edge"},
	})
	return f
}

func TestBroker_Authentication(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		name string
		o    connOpts
	}{
		{"unknown user", connOpts{clientID: f.edge, user: "nobody"}},
		{"wrong password", connOpts{clientID: f.edge, user: f.edgeUser, wrongPassword: true}},
		{"no username", connOpts{clientID: f.edge}},
		{"an edge under another client ID", connOpts{clientID: f.otherEdge, user: f.edgeUser}},
		{"an edge with a will on another topic", connOpts{clientID: f.edge, user: f.edgeUser, will: f.site.Facts(f.edge)}},
		{"an edge with a will on another edge's status", connOpts{clientID: f.edge, user: f.edgeUser, will: f.site.Status(f.sameSiteID)}},
		{"an access naming no valid edge", connOpts{clientID: "not-an-edge", user: "broken"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dial(t, f.b, tt.o)
			require.Error(t, err)
			assert.True(t, errors.Is(err, packets.ErrorRefusedBadUsernameOrPassword) || errors.Is(err, packets.ErrorRefusedNotAuthorised),
				"refused by the broker, not failed otherwise: %v", err)
		})
	}
	_ = mustDial(t, f.b, connOpts{clientID: f.edge, user: f.edgeUser, will: f.site.Status(f.edge)})
	_ = mustDial(t, f.b, connOpts{clientID: "svc-cloud-1", user: f.cloudUser, will: f.site.Changes()})
}

func TestBroker_RunTwice(t *testing.T) {
	f := newFixture(t)
	_ = mustDial(t, f.b, connOpts{clientID: "svc-cloud-1", user: f.cloudUser}) // Run is serving
	require.Error(t, f.b.Run(context.Background()))
}

func TestBroker_EdgeSubscriptions(t *testing.T) {
	f := newFixture(t)
	e := mustDial(t, f.b, connOpts{clientID: f.edge, user: f.edgeUser})
	for filter, want := range map[string]byte{
		f.site.Changes():               1,
		f.site.Replies(f.edge):         1,
		f.otherSite.Changes():          0x80,
		f.site.Replies(f.sameSiteID):   0x80,
		f.site.Facts(f.edge):           0x80,
		f.site.EdgeFilter():            0x80,
		protocol.SharedFacts:           0x80,
		"$share/g/" + f.site.Changes(): 0x80,
		protocol.Root + "/#":           0x80,
	} {
		assert.Equal(t, want, e.subscribe(t, filter), "SUBACK for %s", filter)
	}
}

// TestBroker_EdgePublications checks where an edge may publish: a refused
// QoS 1 publication closes an MQTT 3.1.1 connection and reaches nobody.
func TestBroker_EdgePublications(t *testing.T) {
	f := newFixture(t)
	cloud := mustDial(t, f.b, connOpts{clientID: "svc-cloud-1", user: f.cloudUser})
	require.Equal(t, byte(1), cloud.subscribe(t, protocol.Root+"/#"))

	allowed := []string{f.site.Facts(f.edge), f.site.Resync(f.edge), f.site.Status(f.edge)}
	e := mustDial(t, f.b, connOpts{clientID: f.edge, user: f.edgeUser})
	for _, topic := range allowed {
		e.publish(t, topic, "x")
		assert.Equal(t, topic, cloud.next(t).Topic())
	}

	refused := []string{
		f.otherSite.Facts(f.edge),   // its own ID under another site
		f.site.Facts(f.sameSiteID),  // facts in another edge's name
		f.site.Prefix() + "/facts",  // the old site-wide facts topic
		f.site.Changes(),            // its site's feed, which only the cloud writes
		f.site.Replies(f.edge),      // its own replies, likewise
		f.site.Status(f.sameSiteID), // another edge's status
		f.otherSite.Resync(f.edge),  // its own ID under another site
		"elsewhere",                 // outside the protocol
	}
	for _, topic := range refused {
		t.Run(topic, func(t *testing.T) {
			e := mustDial(t, f.b, connOpts{clientID: f.edge, user: f.edgeUser})
			e.Publish(topic, 1, false, "forged")
			select {
			case <-e.lost:
			case <-time.After(5 * time.Second):
				t.Fatal("the broker kept the connection after a refused publication")
			}
			// Messages reach the subscriber in the order the broker
			// routed them: the sentinel arrives first only if the forged
			// message was never routed.
			sentinel := f.site.Prefix() + "/sentinel"
			cloud.publish(t, sentinel, "after")
			assert.Equal(t, sentinel, cloud.next(t).Topic(), "the forged message was not delivered")
		})
	}
}

// TestBroker_Delivery checks the edge gets its feed and replies, and not
// another site's or edge's.
func TestBroker_Delivery(t *testing.T) {
	f := newFixture(t)
	cloud := mustDial(t, f.b, connOpts{clientID: "svc-cloud-1", user: f.cloudUser})
	e := mustDial(t, f.b, connOpts{clientID: f.edge, user: f.edgeUser})
	require.Equal(t, byte(1), e.subscribe(t, f.site.Changes()))
	require.Equal(t, byte(1), e.subscribe(t, f.site.Replies(f.edge)))
	cloud.publish(t, f.otherSite.Changes(), "other site")
	cloud.publish(t, f.site.Replies(f.sameSiteID), "other edge")
	cloud.publish(t, f.site.Changes(), "feed")
	cloud.publish(t, f.site.Replies(f.edge), "reply")
	assert.Equal(t, "feed", string(e.next(t).Payload()))
	assert.Equal(t, "reply", string(e.next(t).Payload()))
}

// TestBroker_SharedSubscriptions checks that two cloud clients in one
// $share group split the edges' facts between them.
func TestBroker_SharedSubscriptions(t *testing.T) {
	f := newFixture(t)
	c1 := mustDial(t, f.b, connOpts{clientID: "svc-cloud-1", user: f.cloudUser})
	c2 := mustDial(t, f.b, connOpts{clientID: "svc-cloud-2", user: f.cloudUser})
	require.Equal(t, byte(1), c1.subscribe(t, protocol.SharedFacts))
	require.Equal(t, byte(1), c2.subscribe(t, protocol.SharedFacts))
	e := mustDial(t, f.b, connOpts{clientID: f.edge, user: f.edgeUser})
	const n = 200
	for range n {
		e.publish(t, f.site.Facts(f.edge), "fact")
	}
	var mu sync.Mutex
	got := map[*client]int{}
	deadline := time.After(10 * time.Second)
	for total := 0; total < n; total++ {
		select {
		case <-c1.msgs:
			mu.Lock()
			got[c1]++
			mu.Unlock()
		case <-c2.msgs:
			got[c2]++
		case <-deadline:
			t.Fatalf("%d of %d facts delivered", total, n)
		}
	}
	assert.Positive(t, got[c1], "the first client got a share")
	assert.Positive(t, got[c2], "the second client got a share")
}

// TestBroker_QueuedForOfflineEdge checks that a persistent edge session
// gets the feed published while it was away (the access check on queueing
// must still know it).
func TestBroker_QueuedForOfflineEdge(t *testing.T) {
	f := newFixture(t)
	cloud := mustDial(t, f.b, connOpts{clientID: "svc-cloud-1", user: f.cloudUser})
	opts := func() *paho.ClientOptions {
		return paho.NewClientOptions().AddBroker("tcp://" + f.b.Addr()).SetClientID(f.edge).
			SetUsername(f.edgeUser).SetPassword("secret-" + f.edgeUser).SetProtocolVersion(4).
			SetCleanSession(false).SetAutoReconnect(false)
	}
	first := paho.NewClient(opts())
	require.NoError(t, waitToken(first.Connect()))
	require.NoError(t, waitToken(first.Subscribe(f.site.Changes(), 1, nil)))
	first.Disconnect(100)

	cloud.publish(t, f.site.Changes(), "while away")
	msgs := make(chan string, 1)
	second := paho.NewClient(opts().SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) { msgs <- string(m.Payload()) }))
	require.NoError(t, waitToken(second.Connect()))
	t.Cleanup(func() { second.Disconnect(0) })
	select {
	case m := <-msgs:
		assert.Equal(t, "while away", m)
	case <-time.After(5 * time.Second):
		t.Fatal("the queued message did not arrive")
	}
}

func waitToken(tok paho.Token) error {
	if !tok.WaitTimeout(5 * time.Second) {
		return errors.New("timed out")
	}
	return tok.Error()
}
