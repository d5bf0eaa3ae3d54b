package mqttsync

import (
	"crypto/ed25519"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/broker"
	"github.com/svc-vms/svc/sync/protocol"
	"github.com/svc-vms/svc/sync/protocol/asyncapitest"
)

func loadAsyncAPI(t testing.TB) *asyncapitest.Document {
	t.Helper()
	doc, err := asyncapitest.Parse(protocol.AsyncAPI)
	require.NoError(t, err)
	return doc
}

// spied is one message a spy received.
type spied struct {
	topic    string
	qos      byte
	retained bool
	payload  []byte
}

// spy records every message under filter, subscribed at QoS 1 with the
// cloud's access.
type spy struct {
	mu   sync.Mutex
	msgs []spied
}

func startSpy(t *testing.T, b *backend, filter string) (*spy, paho.Client) {
	t.Helper()
	s := &spy{}
	c := rawClient(t, b, broker.Access{Cloud: true}, "spy-"+ids.New(ids.Edge))
	tok := c.Subscribe(filter, 1, func(_ paho.Client, m paho.Message) {
		s.mu.Lock()
		s.msgs = append(s.msgs, spied{m.Topic(), m.Qos(), m.Retained(), slices.Clone(m.Payload())})
		s.mu.Unlock()
	})
	require.True(t, tok.WaitTimeout(5*time.Second), "subscribe %s", filter)
	require.NoError(t, tok.Error())
	return s, c
}

func (s *spy) all() []spied {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// seen reports whether the spy received a message that the document
// names msg on a channel, and, for a status, in state.
func (s *spy) seen(doc *asyncapitest.Document, msg, state string) bool {
	for _, m := range s.all() {
		_, got, err := doc.Check(m.topic, m.payload)
		if err != nil || got.Name != msg {
			continue
		}
		if state == "" || strings.Contains(string(m.payload), `"state":"`+state+`"`) {
			return true
		}
	}
	return false
}

// The messages the real halves exchange through a broker are what the
// protocol's AsyncAPI document says: every one on a channel of the
// document, valid against one of its messages, at the QoS of its
// operation; every message of the document occurs; and what stays
// retained is only what the document's operations retain (the status).
func TestAsyncAPI_Traffic(t *testing.T) {
	doc := loadAsyncAPI(t)
	for _, bk := range backends(t) {
		t.Run(bk.name, func(t *testing.T) {
			t.Parallel()
			b := bk.start(t)
			site := newSite()
			filter := protocol.Root + "/" + site.Mode + "/" + site.OrgID + "/#"
			traffic, _ := startSpy(t, b, filter)

			store := newFakeCloud()
			store.addVisits(site, 3)
			cloud, _ := startCloud(t, b, site.OrgID, store, nil)
			waitFor(t, patience, "the feed to be published", func() bool { return store.unpublished(site) == 0 })
			pub, _, err := ed25519.GenerateKey(nil)
			require.NoError(t, err)
			e := startEdge(t, b, site, store, func(c *EdgeConfig) {
				c.Software = "svc-edge 1.4.2"
				c.BadgeKey = pub
				c.Health = func() (protocol.CacheCounts, uint64, error) {
					return protocol.CacheCounts{Visits: 3, People: 1, Gates: 1, Keys: 1}, 1 << 30, nil
				}
				// The broker's will fires at once when the proxy is cut;
				// a slow retry keeps the edge away meanwhile.
				c.MinBackoff, c.MaxBackoff = 10*time.Second, 10*time.Second
			})
			waitFor(t, patience, "the edge's snapshot", func() bool { return e.store.Seq() == 3 && !e.State().SyncedAt.IsZero() })

			store.addVisits(site, 2) // the feed
			cloud.Notify()
			e.store.record(3) // facts, acknowledged
			e.Notify()
			waitFor(t, patience, "the feed and the acknowledgements", func() bool {
				return e.store.Seq() == 5 && e.store.outboxLen() == 0
			})
			// The next periodic resync (every 2 s here) is answered with
			// changes: none, since the edge is current.
			waitFor(t, patience, "a changes reply", func() bool { return traffic.seen(doc, "changesReply", "") })
			waitFor(t, patience, "an online status", func() bool { return traffic.seen(doc, "status", "online") })
			e.proxy.Cut() // no DISCONNECT: the broker publishes the last will
			waitFor(t, patience, "the last will", func() bool { return traffic.seen(doc, "status", "offline") })
			e.stop()

			names := map[string]bool{}
			for _, m := range traffic.all() {
				ch, msg, err := doc.Check(m.topic, m.payload)
				require.NoError(t, err, "%s: %s", m.topic, m.payload)
				require.Equal(t, ch.Operations[0].QoS, int(m.qos), "%s: %s is delivered at the QoS of its operation", m.topic, msg.Name)
				names[msg.Name] = true
			}
			for _, ch := range doc.Channels {
				for _, m := range ch.Messages {
					require.True(t, names[m.Name], "the halves exchanged no %s", m.Name)
				}
			}

			// What a new subscriber is sent as retained: the edge's status
			// alone. A marker published after subscribing comes after the
			// retained messages, which brokers send with the SUBACK.
			retained, c := startSpy(t, b, filter)
			marker := protocol.Root + "/" + site.Mode + "/" + site.OrgID + "/asyncapi-test-marker"
			publish(t, c, marker, false, []byte("end"))
			waitFor(t, patience, "the marker", func() bool {
				return slices.ContainsFunc(retained.all(), func(m spied) bool { return m.topic == marker })
			})
			kept := map[string]int{} // retained messages by channel
			for _, m := range retained.all() {
				if m.topic == marker {
					continue
				}
				require.True(t, m.retained, "%s: only retained messages come before the marker", m.topic)
				ch, _, err := doc.Match(m.topic)
				require.NoError(t, err)
				kept[ch.Name]++
			}
			for _, ch := range doc.Channels {
				want := 0
				if ch.Operations[0].Retain {
					want = 1 // this edge's
				}
				require.Equal(t, want, kept[ch.Name], "retained messages on %s", ch.Name)
			}
		})
	}
}

// What the document says an edge sends and receives is what the brokers'
// access rules let it publish and subscribe to, on its own topics and not
// on another edge's.
func TestAsyncAPI_EdgeRights(t *testing.T) {
	doc := loadAsyncAPI(t)
	site := newSite()
	me, other := ids.New(ids.Edge), ids.New(ids.Edge)
	acc := broker.Access{Site: site, EdgeID: me}
	for _, ch := range doc.Channels {
		mine := ch.Topic(map[string]string{"mode": site.Mode, "org_id": site.OrgID, "site_id": site.SiteID, "edge_id": me})
		theirs := ch.Topic(map[string]string{"mode": site.Mode, "org_id": site.OrgID, "site_id": site.SiteID, "edge_id": other})
		_, sends := ch.Operation("send")
		_, receives := ch.Operation("receive")
		require.NotEqual(t, sends, receives, "channel %s: the edge either sends or receives", ch.Name)
		require.Equal(t, sends, acc.MayPublish(mine), "channel %s: publish", ch.Name)
		require.Equal(t, receives, acc.MaySubscribe(mine), "channel %s: subscribe", ch.Name)
		if slices.Contains(ch.Params, "edge_id") {
			require.False(t, acc.MayPublish(theirs) || acc.MaySubscribe(theirs), "channel %s: another edge's topic", ch.Name)
		}
	}
}
