// Command goclient runs a short flow against a running svc-cloud with
// the Go client oapi-codegen generates from its served OpenAPI document
// (make clients generates client.gen.go beside a copy of this file, in
// this small module of its own, and runs it). It creates a visit, checks
// it in, reads the visit.checked_in event through the typed union and
// reads two typed problems; it exits non-zero on any mismatch, so a
// change to the document that breaks a Go client fails make test.
//
// SVC_API_URL is the API's base URL (ending in /v1) and SVC_API_KEY a
// test-mode secret key.
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/google/uuid"
)

func main() {
	base, key := os.Getenv("SVC_API_URL"), os.Getenv("SVC_API_KEY")
	if base == "" || key == "" {
		fmt.Fprintln(os.Stderr, "goclient: SVC_API_URL and SVC_API_KEY must be set")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := flow(ctx, base, key); err != nil {
		fmt.Fprintln(os.Stderr, "goclient:", err)
		os.Exit(1)
	}
}

func flow(ctx context.Context, base, key string) error {
	c, err := NewClientWithResponses(base, WithHTTPClient(&http.Client{Timeout: 10 * time.Second}),
		WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
	if err != nil {
		return err
	}

	// A site and an active host of the demo organisation.
	sites, err := c.ListSitesWithResponse(ctx, &ListSitesParams{})
	if err != nil {
		return fmt.Errorf("list sites: %w", err)
	}
	if sites.JSON200 == nil || len(sites.JSON200.Data) == 0 {
		return fmt.Errorf("list sites: %s, no site: %s", sites.Status(), sites.Body)
	}
	site := sites.JSON200.Data[0].Id
	active := true
	people, err := c.ListPeopleWithResponse(ctx, &ListPeopleParams{Active: &active})
	if err != nil {
		return fmt.Errorf("list people: %w", err)
	}
	if people.JSON200 == nil || len(people.JSON200.Data) == 0 {
		return fmt.Errorf("list people: %s, no active person: %s", people.Status(), people.Body)
	}
	host := people.JSON200.Data[0].Id

	// Create a visit expected now, so that its pass admits it at once.
	// The same Idempotency-Key sent again gets the same visit back.
	body := VisitCreate{SiteId: site, HostId: &host, Type: "meeting"}
	body.Visitor.Name = "Greta Goclient"
	expected := time.Now().UTC()
	body.ExpectedAt = &expected
	idem := uuid.New()
	created, err := c.CreateVisitWithResponse(ctx, &CreateVisitParams{IdempotencyKey: idem}, body)
	if err != nil {
		return fmt.Errorf("create visit: %w", err)
	}
	if created.JSON201 == nil {
		return fmt.Errorf("create visit: %s, want 201: %s", created.Status(), created.Body)
	}
	visit := *created.JSON201
	if visit.Status != VisitStatusExpected || visit.Visitor.Name == nil || *visit.Visitor.Name != body.Visitor.Name || visit.SiteId != site {
		return fmt.Errorf("create visit: got status %q, visitor %v, site %q", visit.Status, visit.Visitor.Name, visit.SiteId)
	}
	again, err := c.CreateVisitWithResponse(ctx, &CreateVisitParams{IdempotencyKey: idem}, body)
	if err != nil {
		return fmt.Errorf("create visit again: %w", err)
	}
	if again.JSON201 == nil || again.JSON201.Id != visit.Id {
		return fmt.Errorf("create visit again with the same Idempotency-Key: %s, want 201 with visit %s: %s", again.Status(), visit.Id, again.Body)
	}

	// Check it in.
	in, err := c.CheckInVisitWithResponse(ctx, visit.Id, &CheckInVisitParams{IdempotencyKey: uuid.New()}, CheckInVisitJSONRequestBody{})
	if err != nil {
		return fmt.Errorf("check in: %w", err)
	}
	if in.JSON200 == nil || in.JSON200.Status != VisitStatusCheckedIn || in.JSON200.CheckedInAt == nil {
		return fmt.Errorf("check in: %s, want 200 checked_in with checked_in_at: %s", in.Status(), in.Body)
	}

	// Its visit.checked_in event, read through the union: the
	// discriminator gives a VisitEvent whose data is the visit.
	if err := checkedInEvent(ctx, c, visit.Id); err != nil {
		return err
	}

	// Checking in twice is a typed 409 problem.
	twice, err := c.CheckInVisitWithResponse(ctx, visit.Id, &CheckInVisitParams{IdempotencyKey: uuid.New()}, CheckInVisitJSONRequestBody{})
	if err != nil {
		return fmt.Errorf("check in again: %w", err)
	}
	if p := twice.ApplicationproblemJSON409; p == nil || p.Code != ConflictOrStateProblemCodeInvalidState || p.Status != 409 {
		return fmt.Errorf("check in again: %s, want a 409 invalid_state problem: %s", twice.Status(), twice.Body)
	}

	// A visit that does not exist is a typed 404 problem.
	missing, err := c.GetVisitWithResponse(ctx, "visit_00000000000000000000000000")
	if err != nil {
		return fmt.Errorf("get a missing visit: %w", err)
	}
	if p := missing.ApplicationproblemJSON404; p == nil || p.Code != NotFoundProblemCodeNotFound || p.Status != 404 || p.RequestId == "" {
		return fmt.Errorf("get a missing visit: %s, want a 404 not_found problem: %s", missing.Status(), missing.Body)
	}

	// And the visit reads back as checked in.
	got, err := c.GetVisitWithResponse(ctx, visit.Id)
	if err != nil {
		return fmt.Errorf("get visit: %w", err)
	}
	if got.JSON200 == nil || got.JSON200.Status != VisitStatusCheckedIn {
		return fmt.Errorf("get visit: %s, want 200 checked_in: %s", got.Status(), got.Body)
	}
	fmt.Printf("goclient: visit %s created, checked in, its %s event read as a VisitEvent; 409 %s and 404 %s read as typed problems\n",
		visit.Id, EventTypeVisitCheckedIn, ConflictOrStateProblemCodeInvalidState, NotFoundProblemCodeNotFound)
	return nil
}

// checkedInEvent finds the visit.checked_in event of visit among the
// newest ones of that type and checks its data.
func checkedInEvent(ctx context.Context, c *ClientWithResponses, visit VisitId) error {
	typ := EventTypeVisitCheckedIn
	events, err := c.ListEventsWithResponse(ctx, &ListEventsParams{Type: &typ})
	if err != nil {
		return fmt.Errorf("list events: %w", err)
	}
	if events.JSON200 == nil {
		return fmt.Errorf("list events: %s, want 200: %s", events.Status(), events.Body)
	}
	for _, e := range events.JSON200.Data {
		v, err := e.ValueByDiscriminator()
		if err != nil {
			return fmt.Errorf("list events: an event of the union: %w", err)
		}
		ve, ok := v.(VisitEvent)
		if !ok {
			return fmt.Errorf("list events: a %s event is a %T, want a VisitEvent", typ, v)
		}
		if ve.Data.Id != visit {
			continue
		}
		if ve.Type != VisitEventTypeVisitCheckedIn || ve.Data.Status != VisitStatusCheckedIn || ve.Data.CheckedInAt == nil {
			return fmt.Errorf("the event of visit %s: type %q, data status %q, checked_in_at %v", visit, ve.Type, ve.Data.Status, ve.Data.CheckedInAt)
		}
		return nil
	}
	return errors.New("list events: no visit.checked_in event for visit " + visit)
}
