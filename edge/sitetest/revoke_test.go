package sitetest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/sitetest"
)

// A revoked edge is cut off: on the embedded broker it is disconnected
// within a few rechecks and refused when it connects again; on any broker
// the cloud refuses its facts (they stay in its outbox, unacknowledged)
// and does not answer its resyncs. Its gates still decide from the cache:
// revocation is the cloud's, the appliance cannot be told.
func TestEdge_RevokedIsCutOff(t *testing.T) {
	sitetest.Each(t, []string{sitetest.SQLite}, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{ResyncEvery: 200 * time.Millisecond})
		e.Start()
		v := w.NewVisit(t)
		tok := w.Token(t, v.ID)
		w.WaitConverged(t, e, settle)

		_, err := w.Svc().RevokeEdge(t.Context(), w.Tenant, e.ID)
		require.NoError(t, err)
		if opts.Broker == sitetest.Embedded {
			sitetest.Eventually(t, settle, func() bool { return !e.Half().State().Connected },
				"the embedded broker did not disconnect the revoked edge")
		}
		before := w.Cloud().Half().State()
		r := e.Scan(t, w.Entry, tok)
		require.True(t, r.Admitted, "%+v", r)
		if opts.Broker == sitetest.Mosquitto { // still connected: the cloud refuses what it sends
			sitetest.Eventually(t, settle, func() bool { return w.Cloud().Half().State().FactsRejected > before.FactsRejected },
				"the cloud did not refuse the revoked edge's fact")
			sitetest.Eventually(t, settle, func() bool { return w.Cloud().Half().State().Dropped > before.Dropped },
				"the cloud did not drop the revoked edge's resync")
		}
		require.Equal(t, 1, e.Outbox(), "the fact stays with the edge")
		_, found := w.EdgeFact(t, r.FactID)
		require.False(t, found, "nothing of the revoked edge is recorded")
		require.Equal(t, "expected", string(w.Visit(t, v.ID).Status))
		if opts.Broker == sitetest.Embedded {
			require.False(t, e.Half().State().Connected, "refused when it connects again")
		}
	})
}
