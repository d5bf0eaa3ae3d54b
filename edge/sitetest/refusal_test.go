package sitetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// otherOrganisation's token is a real pass of another organisation,
// signed with its own key.
func otherOrganisationToken(t *testing.T, w *sitetest.World) string {
	t.Helper()
	ctx := context.Background()
	svc := w.Svc()
	org, err := svc.CreateOrganisation(ctx, "Elsewhere", cloud.PlanPro)
	require.NoError(t, err)
	tn := cloud.Tenant{OrgID: org.ID, Mode: cloud.ModeTest}
	a := cloud.Actor{Tenant: tn, KeyID: ids.New(ids.Key), Plan: cloud.PlanPro}
	site, err := svc.CreateSite(ctx, tn, cloud.SiteInput{Name: cloud.Some("Elsewhere"), Timezone: cloud.Some("Europe/London")})
	require.NoError(t, err)
	now := time.Now().UTC()
	at, until := now.Add(-10*time.Minute), now.Add(2*time.Hour)
	v, err := svc.CreateVisit(ctx, a, cloud.VisitInput{SiteID: cloud.Some(site.ID), Type: cloud.Some("meeting"),
		ExpectedAt: cloud.Some(&at), ExpectedUntil: cloud.Some(&until), Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Eve")})})
	require.NoError(t, err)
	tok, err := svc.PassToken(ctx, a, v.ID)
	require.NoError(t, err)
	return tok
}

// Forged tokens, a pass signed by another organisation's key, a pass for
// another site, a pass revoked by a reschedule and a cancelled visit's
// pass are refused at the gate with their reasons, and every refusal
// reaches the cloud as a refused fact with its reason, changing no visit.
func TestScan_RefusalsReachTheCloud(t *testing.T) {
	sitetest.Each(t, nil, func(t *testing.T, opts sitetest.Options) {
		w := sitetest.Start(t, opts)
		e := w.NewEdge(t, sitetest.EdgeOptions{})
		e.Start()
		ctx := context.Background()

		good := w.NewVisit(t)
		goodTok := w.Token(t, good.ID)
		moved := w.NewVisit(t)
		movedTok := w.Token(t, moved.ID)
		later := time.Now().UTC().Add(24 * time.Hour)
		_, err := w.Svc().Reschedule(ctx, w.Actor, moved.ID, cloud.RescheduleInput{ExpectedAt: cloud.Some(&later)})
		require.NoError(t, err)
		cancelled := w.NewVisit(t)
		cancelledTok := w.Token(t, cancelled.ID)
		_, err = w.Svc().Cancel(ctx, w.Actor, cancelled.ID)
		require.NoError(t, err)
		annexTok := w.Token(t, w.NewVisitAt(t, w.Other).ID)
		w.WaitConverged(t, e, settle)
		cached, _ := e.View().Visit(moved.ID)
		require.True(t, cached.Revoked, "the reschedule revoked the old pass at the edge")

		keys, err := w.Svc().PassKeySet(ctx, w.Tenant)
		require.NoError(t, err)
		// A token altered in its claims (the visit it names) or in its
		// signature is well formed and fails its signature.
		alteredClaims, alteredSig := alter(goodTok, len(passtoken.Prefix)+10), alter(goodTok, len(goodTok)-10)
		for _, tok := range []string{alteredClaims, alteredSig} {
			_, err := passtoken.Verify(tok, keys)
			require.ErrorIs(t, err, passtoken.ErrBadSignature)
		}
		foreign := otherOrganisationToken(t, w)
		_, err = passtoken.Verify(foreign, keys)
		require.ErrorIs(t, err, passtoken.ErrUnknownKey)
		cases := []struct {
			name, token string
			reason      string
			visit       *cloud.Visit // the pass's visit, when the edge knows it
		}{
			{"not a token", "hello, gate", protocol.ReasonInvalidToken, nil},
			{"claims altered", alteredClaims, protocol.ReasonInvalidToken, nil},
			{"signature altered", alteredSig, protocol.ReasonInvalidToken, nil},
			{"another organisation's key", foreign, protocol.ReasonInvalidToken, nil},
			{"a pass for another site", annexTok, string(passrule.WrongGate), nil},
			{"a pass revoked by a reschedule", movedTok, string(passrule.Ended), &moved},
			{"a cancelled visit's pass", cancelledTok, string(passrule.Ended), &cancelled},
		}
		var facts []string
		for _, c := range cases {
			res := e.Scan(t, w.Entry, c.token)
			require.False(t, res.Admitted, "%s: %+v", c.name, res)
			require.Equal(t, string(protocol.FactRefused), res.Kind, c.name)
			require.Equal(t, c.reason, res.Reason, c.name)
			facts = append(facts, res.FactID)
		}
		sitetest.Eventually(t, settle, func() bool { return e.Outbox() == 0 }, "the refusals were not acknowledged")

		rows := w.FactRows(t, e.ID)
		require.Len(t, rows, len(cases))
		for i, c := range cases {
			rec, ok := w.EdgeFact(t, facts[i])
			require.True(t, ok, "%s: fact %s not recorded", c.name, facts[i])
			require.Equal(t, protocol.FactRefused, rec.Fact.Kind, c.name)
			require.Equal(t, c.reason, rec.Fact.Reason, c.name)
			require.Equal(t, e.ID, rec.Fact.EdgeID, c.name)
			require.Equal(t, w.Entry, rec.Fact.GateID, c.name)
			if c.visit != nil {
				require.Equal(t, c.visit.ID, rec.Fact.PassVisitID, c.name)
				got := w.Visit(t, c.visit.ID)
				require.Equal(t, cloud.VisitCancelled, got.Status, c.name)
				require.Zero(t, got.Pass.Uses, c.name)
			}
		}
		for _, r := range rows {
			require.Equal(t, string(protocol.FactRefused), r.Kind)
			require.NotEmpty(t, r.Reason)
		}
		require.Equal(t, cloud.VisitExpected, w.Visit(t, good.ID).Status, "forged copies of its pass did nothing")

		// The genuine pass the forgeries were made from admits.
		res := e.Scan(t, w.Entry, goodTok)
		require.True(t, res.Admitted, "%+v", res)
		facts = append(facts, res.FactID)
		sitetest.Eventually(t, settle, func() bool { return len(w.FactRows(t, e.ID)) == len(facts) }, "the check-in did not reach the cloud")
	})
}

// alter changes the token's character at i to another base32 digit.
func alter(token string, i int) string {
	b := []byte(token)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}
