package sitetest_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/sync/protocol"
)

// outageVisits is how many visitors arrive while the site is cut off.
const outageVisits = 50

// outage is what both outages share: 50 visits and one cancelled visit
// at the edge; while cut off, the gate admits the 50 and refuses the
// cancelled one from its cache, and the facts wait in the outbox; once the
// link is back, each fact reaches the cloud once and the cache converges.
func outage(t *testing.T, w *sitetest.World, e *sitetest.Edge, cut, restore func()) {
	visits := w.NewVisits(t, outageVisits)
	toks := w.Tokens(t, visits)
	cancelled := w.NewVisit(t)
	cancelledTok := w.Token(t, cancelled.ID)
	_, err := w.Svc().Cancel(t.Context(), w.Actor, cancelled.ID)
	require.NoError(t, err)
	w.WaitConverged(t, e, settle)

	cut()
	facts := checkIn(t, e.ScanAll, w.Entry, toks)
	// The cache, not the token, decides: the token alone would admit.
	res := e.Scan(t, w.Entry, cancelledTok)
	require.False(t, res.Admitted)
	require.Equal(t, string(passrule.Ended), res.Reason)
	facts = append(facts, res.FactID)
	require.Equal(t, len(facts), e.Outbox())
	late := w.NewVisit(t) // the cloud goes on meanwhile
	require.Empty(t, w.FactRows(t, e.ID), "nothing reached the cloud during the outage")
	require.Equal(t, cloud.VisitExpected, w.Visit(t, visits[0].ID).Status)

	restore()
	waitDeliveredOnce(t, w, e.ID, facts, visits, e.Outbox)
	rec, ok := w.EdgeFact(t, res.FactID)
	require.True(t, ok)
	require.Equal(t, protocol.FactRefused, rec.Fact.Kind)
	require.Equal(t, string(passrule.Ended), rec.Fact.Reason)
	require.Zero(t, w.Visit(t, cancelled.ID).Pass.Uses)
	w.WaitConverged(t, e, heal)
	_, ok = e.View().Visit(late.ID)
	require.True(t, ok, "the change made during the outage reached the edge")
}

// With the link between the edge and the broker cut, the gates go on
// deciding from the cache and the facts queue; once it is back, each
// reaches the cloud exactly once. The cloud learns of the outage from the
// edge's last will, and of its end from its status.
func TestOutage_LinkCut(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		connects := func() uint64 { return e.Half().State().Counters.Connects }
		var before uint64
		outage(t, w, e, func() {
			before = connects()
			e.Proxy.Cut()
			sitetest.Eventually(t, settle, func() bool { return !e.Half().State().Connected }, "the edge did not notice the cut")
			sitetest.Eventually(t, settle, func() bool { return w.CloudEdge(t, e.ID).State == cloud.EdgeOffline },
				"the broker did not pass the edge's last will to the cloud")
		}, func() {
			e.Proxy.Restore()
			sitetest.Eventually(t, heal, func() bool { return connects() > before }, "the edge did not reconnect")
			sitetest.Eventually(t, settle, func() bool { return w.CloudEdge(t, e.ID).State == cloud.EdgeOnline },
				"the cloud did not learn the edge is back")
		})
	})
}

// With the cloud half stopped, the edge stays connected to the broker and
// publishes its facts into the void, again each AckTimeout; a new cloud
// half applies each once.
func TestOutage_CloudStopped(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		outage(t, w, e, w.StopCloud, func() {
			// Every fact went out, and out again unacknowledged, before
			// anyone read them.
			sitetest.Eventually(t, heal, func() bool {
				return e.Half().State().Counters.FactsPublished >= 2*(outageVisits+1)
			}, "the edge did not publish its facts again")
			require.True(t, e.Half().State().Connected)
			require.Empty(t, w.FactRows(t, e.ID))
			w.StartCloud()
		})
	})
}

// With the broker gone for everyone (the embedded one stopped, losing its
// sessions and queues, then started afresh; Mosquitto cut off from the
// cloud halves and the edge), the gates go on deciding and the facts
// queue; once it is back, each reaches the cloud once, and the change the
// cloud made meanwhile reaches the edge.
func TestOutage_Broker(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		outage(t, w, e, func() {
			w.BrokerDown()
			sitetest.Eventually(t, settle, func() bool {
				return !e.Half().State().Connected && !w.Cloud().Half().State().Connected
			}, "the halves did not lose the broker")
		}, func() {
			w.BrokerUp()
			sitetest.Eventually(t, heal, func() bool {
				return e.Half().State().Connected && w.Cloud().Half().State().Connected
			}, "the halves did not reconnect")
		})
	})
}
