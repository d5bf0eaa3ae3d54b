package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// BenchApplyFacts measures what the cloud half's facts worker pays per
// fact: Service.ApplyFacts on s, batch check-in facts at a time, each
// about a visit of its own among b.N expected visits made beforehand
// (as cloud/bench/edgesync's drain has them: one site, one edge, one
// entry gate). Run it with a fixed -benchtime (5000x), so the table is
// the same size from run to run.
func BenchApplyFacts(b *testing.B, s cloud.Store, batch int) {
	ctx := context.Background()
	svc := cloud.NewService(s, time.Now)
	res, err := svc.Seed(ctx, "ApplyFacts bench", cloud.PlanEnterprise)
	if err != nil {
		b.Fatal(err)
	}
	p, err := svc.Authenticate(ctx, res.Keys.SecretTest)
	if err != nil {
		b.Fatal(err)
	}
	actor, t := cloud.ActorOf(p), p.Tenant()
	site := res.Test.Sites[0]
	edge, _, err := svc.CreateEdge(ctx, t, site.ID, "Bench edge")
	if err != nil {
		b.Fatal(err)
	}
	from := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	until := from.Add(13 * time.Hour)
	tmpl, err := svc.CreateVisit(ctx, actor, cloud.VisitInput{
		SiteID: cloud.Some(site.ID), HostID: cloud.Some(res.Test.People[0]), Type: cloud.Some("meeting"),
		Visitor:    cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Template"), Email: cloud.Some("template@example.org")}),
		ExpectedAt: cloud.Some(&from), ExpectedUntil: cloud.Some(&until), SendPass: cloud.Some(false),
	})
	if err != nil {
		b.Fatal(err)
	}
	visits := make([]string, b.N)
	for i := range visits {
		now := time.Now().UTC().Truncate(time.Microsecond)
		vis := cloud.Visitor{ID: ids.New(ids.Visitor), Tenant: t, Name: fmt.Sprintf("Bench Visitor %d", i),
			Email: fmt.Sprintf("bench.%d@example.org", i), CreatedAt: now, UpdatedAt: now}
		v := tmpl
		v.ID, v.VisitorID, v.Visitor, v.CreatedAt, v.UpdatedAt = ids.New(ids.Visit), vis.ID, vis, now, now
		v.Hosts = slices.Clone(tmpl.Hosts)
		v.Pass.ForVisitID = v.ID
		if err := s.CreateVisit(ctx, v, cloud.VisitWrites{Visitor: &vis}); err != nil {
			b.Fatal(err)
		}
		visits[i] = v.ID
	}
	es := cloud.EdgeSite(t, site.ID)
	at := time.Now().UTC()
	facts := make([]protocol.Fact, b.N)
	for i, id := range visits {
		facts[i] = protocol.Fact{V: protocol.Version, ID: ids.New(ids.Fact), EdgeID: edge.ID, Counter: uint64(i + 1),
			Kind: protocol.FactCheckIn, At: at.Add(time.Duration(i) * 10 * time.Microsecond), GateID: site.Gates[0],
			VisitID: id, PassVisitID: id}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for chunk := range slices.Chunk(facts, batch) {
		errs, err := svc.ApplyFacts(ctx, es, chunk)
		if err != nil {
			b.Fatal(err)
		}
		for i, err := range errs {
			if err != nil {
				b.Fatalf("fact %s: %v", chunk[i].ID, err)
			}
		}
	}
	b.StopTimer()
	for _, id := range visits[:min(len(visits), 3)] {
		v, err := s.Visit(ctx, t, id)
		if err != nil {
			b.Fatal(err)
		}
		if v.Status != cloud.VisitCheckedIn {
			b.Fatalf("visit %s is %s after its check-in", id, v.Status)
		}
	}
}
