package sitetest_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// message is something a raw client publishes.
type message struct {
	name    string
	topic   string
	payload []byte
}

// encode is a message's JSON.
func encode[M protocol.Message](t *testing.T, m M) []byte {
	t.Helper()
	b, err := protocol.Encode(m)
	require.NoError(t, err)
	return b
}

// tamper replaces old with new in b once, and requires that it did.
func tamper(t *testing.T, b []byte, old, new string) []byte {
	t.Helper()
	out := bytes.Replace(b, []byte(old), []byte(new), 1)
	require.NotEqual(t, b, out, "%q is not in %s", old, b)
	return out
}

// oversize is a message that would be valid but for its size: padded
// with white space to just over protocol.MaxMessage, and under the
// embedded broker's packet limit, so it reaches the halves.
func oversize(msg []byte) []byte {
	pad := strings.Repeat(" ", protocol.MaxMessage+1000-len(msg))
	return append([]byte("{"+pad), msg[1:]...)
}

// Messages that are malformed (garbage, another version, unknown fields,
// missing fields, too large) or foreign (a fact naming another edge than
// its topic, another site's edge's fact on a topic under this site, an
// unknown edge's fact, this edge's fact on its topic under another site, a
// status naming another edge, a snapshot answering no request, a batch
// for another site) are published on the site's topics by a raw client.
// Nothing crashes, nothing is applied (the cloud's state and the edge's
// cache stay as they were), each is seen and dropped or rejected, and a
// real scan goes through afterwards.
func TestMQTT_MalformedAndForeignMessages(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		v := w.NewVisit(t)
		tok := w.Token(t, v.ID)
		w.WaitConverged(t, e, settle)
		unknown := ids.New(ids.Edge)
		annex, _, err := w.Svc().CreateEdge(context.Background(), w.Tenant, w.Other.SiteID, "Annex")
		require.NoError(t, err)
		head, seq := w.Head(t), e.View().Seq()
		cloudBefore, edgeBefore := w.Cloud().Half().State(), e.Half().State().Counters

		now := time.Now().UTC().Truncate(time.Microsecond)
		var forged []string // facts that must never be recorded
		fact := func(edgeID string) protocol.Fact {
			f := protocol.Fact{ID: ids.New(ids.Fact), Kind: protocol.FactCheckIn, EdgeID: edgeID, Counter: 1000, At: now,
				GateID: w.Entry, VisitID: v.ID}
			forged = append(forged, f.ID)
			return f
		}
		good := fact(e.ID) // a well-formed fact of this edge: never published as is
		goodFact := encode(t, &good)
		fake := protocol.Visit{ID: ids.New(ids.Visit), Status: "expected", ExpectedAt: &now, Rules: protocol.Rules{GateIDs: []string{}}}
		fake.ForVisitID = fake.ID
		batch := encode(t, &protocol.Batch{Changes: []protocol.Change{{Seq: seq + 1, At: now, Visit: &fake}}}) // never published as is
		garbage := []byte("\x00\xff{not json at all")

		toCloud := []message{ // each dropped by the cloud half
			{"garbage fact", w.Site.Facts(e.ID), garbage},
			{"empty fact", w.Site.Facts(e.ID), []byte{}},
			{"fact of version 2", w.Site.Facts(e.ID), tamper(t, goodFact, `"v":1`, `"v":2`)},
			{"fact with an unknown field", w.Site.Facts(e.ID), tamper(t, goodFact, `"v":1,`, `"v":1,"mood":"sneaky",`)},
			{"fact without an ID", w.Site.Facts(e.ID), tamper(t, goodFact, `"id":"`+good.ID+`",`, ``)},
			{"fact over MaxMessage", w.Site.Facts(e.ID), oversize(goodFact)},
			{"fact naming another edge than its topic", w.Site.Facts(e.ID), encode(t, ptr(fact(annex.ID)))},
			{"garbage resync request", w.Site.Resync(e.ID), garbage},
			{"resync request of version 2", w.Site.Resync(e.ID), []byte(`{"v":2,"request_id":"abc","after":0}`)},
			{"garbage status", w.Site.Status(e.ID), garbage},
			{"status naming another edge", w.Site.Status(e.ID), encode(t, &protocol.Status{EdgeID: annex.ID, State: "offline", At: now})},
		}
		rejected := []message{ // well formed, refused by the cloud
			{"another site's edge's fact on its topic under this site", w.Site.Facts(annex.ID), encode(t, ptr(fact(annex.ID)))},
			{"fact of an unknown edge", w.Site.Facts(unknown), encode(t, ptr(fact(unknown)))},
			{"this edge's fact on its topic under another site", w.Other.Facts(e.ID), encode(t, ptr(fact(e.ID)))},
		}
		toEdge := []message{ // the last on each topic is dropped after the others were handled
			{"batch for another site", w.Other.Changes(), batch}, // the edge does not even receive it
			{"snapshot answering no request", w.Site.Replies(e.ID), encode(t, &protocol.Reply{Kind: protocol.ReplySnapshot,
				RequestID: "feedfacefeedfacefeedface", Snapshot: &protocol.Snapshot{Seq: head + 100, Part: 1, Parts: 1,
					Settings: &protocol.Settings{Timezone: "UTC", OfflineLimitMinutes: 1}, Gates: []protocol.Gate{}, Keys: []protocol.Key{},
					Visits: []protocol.Visit{fake}}})},
			{"garbage batch", w.Site.Changes(), garbage},
			{"empty batch", w.Site.Changes(), []byte(`{"v":1,"changes":[]}`)},
			{"batch of version 2", w.Site.Changes(), tamper(t, batch, `"v":1`, `"v":2`)},
			{"batch with an unknown field", w.Site.Changes(), tamper(t, batch, `"v":1,`, `"v":1,"from":"mallory",`)},
			{"batch over MaxMessage", w.Site.Changes(), oversize(batch)},
			{"ack with an unknown field", w.Site.Replies(e.ID), []byte(`{"v":1,"kind":"ack","acks":["` + good.ID + `"],"extra":1}`)},
			{"garbage reply", w.Site.Replies(e.ID), garbage},
		}
		const edgeDrops = 7 // toEdge less the two the edge ignores
		raw := w.RawClient(t)
		publish := func(list ...[]message) {
			for _, l := range list {
				for _, m := range l {
					sitetest.Publish(t, raw, m.topic, false, m.payload)
				}
			}
		}
		publish(toCloud, rejected)
		// A message far over any limit: the embedded broker closes the
		// connection that sends it, Mosquitto passes it on.
		giant := w.RawClient(t)
		huge := bytes.Repeat([]byte("{"), 2<<20)
		giant.Publish(w.Site.Facts(e.ID), 1, false, huge).WaitTimeout(10 * time.Second)
		cloudDrops := len(toCloud)
		if opts.Broker == sitetest.Mosquitto {
			cloudDrops++ // the giant
		}
		half := w.Cloud().Half()
		sitetest.Eventually(t, settle, func() bool {
			c := half.State()
			return c.Dropped >= cloudBefore.Dropped+uint64(cloudDrops) && c.FactsRejected >= cloudBefore.FactsRejected+uint64(len(rejected))
		}, "the cloud did not see every message: %s", stateNow{w, e})
		require.Equal(t, cloudBefore.FactsApplied, half.State().FactsApplied)

		// The edge gets its messages while a resync request of its own is
		// outstanding (the cloud half is stopped, so nobody answers): the
		// forged snapshot answers another request.
		w.StopCloud()
		sitetest.Eventually(t, settle, func() bool { return e.Half().State().Resyncing }, "the edge has no resync request outstanding")
		publish(toEdge)
		sitetest.Eventually(t, settle, func() bool { return e.Half().State().Counters.Dropped >= edgeBefore.Dropped+edgeDrops },
			"the edge did not see every message: %s", stateNow{w, e})
		t.Logf("seen: cloud dropped %d rejected %d, edge dropped %d", half.State().Dropped-cloudBefore.Dropped,
			half.State().FactsRejected-cloudBefore.FactsRejected, e.Half().State().Counters.Dropped-edgeBefore.Dropped)
		w.StartCloud()

		// Nothing was applied.
		require.Empty(t, w.FactRows(t, e.ID))
		require.Empty(t, w.FactRows(t, annex.ID))
		for _, id := range forged {
			_, ok := w.EdgeFact(t, id)
			require.False(t, ok, "fact %s was recorded", id)
		}
		c := w.Visit(t, v.ID)
		require.Equal(t, cloud.VisitExpected, c.Status)
		require.Zero(t, c.Pass.Uses)
		require.Equal(t, head, w.Head(t))
		require.Equal(t, seq, e.View().Seq())
		_, ok := e.View().Visit(fake.ID)
		require.False(t, ok, "the forged visit reached the cache")
		cached, _ := e.View().Visit(v.ID)
		require.Equal(t, string(cloud.VisitExpected), cached.Status)
		require.Equal(t, "Europe/London", e.View().Location().String(), "the forged snapshot's settings were not taken")
		require.Zero(t, e.Outbox())
		edges, err := w.Svc().Edges(context.Background(), w.Tenant, w.Site.SiteID)
		require.NoError(t, err)
		require.Equal(t, cloud.EdgeOnline, edges[0].State, "the status naming another edge did not count")

		// And the site still works.
		require.True(t, w.Cloud().Half().State().Connected)
		sitetest.Eventually(t, settle, func() bool { return e.Half().State().Connected }, "the edge is not connected")
		res := e.Scan(t, w.Entry, tok)
		require.True(t, res.Admitted, "%+v", res)
		waitDeliveredOnce(t, w, e.ID, []string{res.FactID}, []cloud.Visit{v}, e.Outbox)
		w.WaitConverged(t, e, settle)
	})
}

func ptr[T any](v T) *T { return &v }

// stateNow prints both halves' counters when a wait gives up.
type stateNow struct {
	w *sitetest.World
	e *sitetest.Edge
}

func (s stateNow) String() string {
	out := "edge dropped " + itoa(int(s.e.Half().State().Counters.Dropped))
	if h := s.w.Cloud().Half(); h != nil {
		out += ", cloud dropped " + itoa(int(h.State().Dropped)) + " rejected " + itoa(int(h.State().FactsRejected))
	}
	return out
}
