package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// timeFormat is how every timestamp is written: RFC 3339, UTC, to the
// millisecond.
const timeFormat = "2006-01-02T15:04:05.000Z"

func ts(t time.Time) string { return t.UTC().Format(timeFormat) }

func tsPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := ts(*t)
	return &s
}

// nullableAt is nullable without a copy: the result points at s itself.
func nullableAt(s *string) *string {
	if *s == "" {
		return nil
	}
	return s
}

// nullable renders "" as null.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// decode reads an operation's body with parse, then asks the domain to
// validate what parsed: a response lists the body's problems and the
// domain's together. It returns the input only when both found nothing.
func decode[I any](c echo.Context, optional bool, parse func(*body) I, validate func(context.Context, I) error) (I, error) {
	var in I
	b, err := readBody(c, optional)
	if err != nil {
		return in, err
	}
	in = parse(b)
	b.finish()
	if len(*b.errs) == 0 {
		return in, nil
	}
	if err := b.merge(validate(c.Request().Context(), in)); err != nil {
		return in, err
	}
	return in, b.errs.err()
}

// at returns the location of an object under prefix, for answerCreated.
func at[O any](prefix string, id func(O) string) func(O) string {
	return func(o O) string { return prefix + id(o) }
}

// Organisation.

type organisationJSON struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Plan      string `json:"plan"`
	Mode      string `json:"mode"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func (s *Server) getOrganisation(c echo.Context) error {
	t := tenant(c)
	o, err := s.svc.Organisation(c.Request().Context(), t)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, organisationJSON{ID: o.ID, Name: o.Name, Plan: string(o.Plan), Mode: string(t.Mode),
		CreatedAt: ts(o.CreatedAt), UpdatedAt: ts(o.UpdatedAt)})
}

// Sites.

type addressJSON struct {
	Line1      string  `json:"line1"`
	Line2      *string `json:"line2"`
	City       *string `json:"city"`
	Region     *string `json:"region"`
	PostalCode *string `json:"postal_code"`
	Country    string  `json:"country"`
}

type siteJSON struct {
	ID               string        `json:"id"`
	Name             string        `json:"name"`
	Timezone         string        `json:"timezone"`
	Address          *addressJSON  `json:"address"`
	Geofence         *geofenceJSON `json:"geofence"`
	Wifi             []wifiJSON    `json:"wifi_networks"`
	WaitLimitMinutes int           `json:"wait_limit_minutes"`
	CreatedAt        string        `json:"created_at"`
	UpdatedAt        string        `json:"updated_at"`
}

func renderSite(st cloud.Site) siteJSON {
	out := siteJSON{ID: st.ID, Name: st.Name, Timezone: st.Timezone, WaitLimitMinutes: st.WaitLimit(),
		CreatedAt: ts(st.CreatedAt), UpdatedAt: ts(st.UpdatedAt)}
	out.Geofence, out.Wifi = renderZone(st.Zone)
	if a := st.Address; a != nil {
		out.Address = &addressJSON{Line1: a.Line1, Line2: nullable(a.Line2), City: nullable(a.City), Region: nullable(a.Region),
			PostalCode: nullable(a.PostalCode), Country: a.Country}
	}
	return out
}

func parseSite(b *body) cloud.SiteInput {
	in := cloud.SiteInput{Name: b.str("name"), Timezone: b.str("timezone"),
		WaitLimitMinutes: b.integer("wait_limit_minutes", cloud.MinWaitLimitMinutes, cloud.MaxWaitLimitMinutes)}
	var a cloud.Address
	present, isNull := b.object("address", true, func(ab *body) {
		a.Line1 = ab.str("line1").Value
		a.Line2 = ab.nullableStr("line2").Value
		a.City = ab.nullableStr("city").Value
		a.Region = ab.nullableStr("region").Value
		a.PostalCode = ab.nullableStr("postal_code").Value
		a.Country = ab.str("country").Value
	})
	if present && isNull {
		in.Address = cloud.Some[*cloud.Address](nil)
	} else if present {
		in.Address = cloud.Some(&a)
	}
	parseZone(b, &in)
	return in
}

func (s *Server) listSites(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor")
	if err != nil {
		return err
	}
	t := tenant(c)
	scope := "sites\x00" + t.OrgID + "\x00" + string(t.Mode)
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.Store().ListSites(c.Request().Context(), t, cloud.SiteFilter{}, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(r cloud.Site) cloud.Position {
		return cloud.Position{CreatedAt: r.CreatedAt, ID: r.ID}
	}, renderSite))
}

func (s *Server) createSite(c echo.Context) error {
	t := tenant(c)
	in, err := decode(c, false, parseSite, func(ctx context.Context, in cloud.SiteInput) error { return s.svc.ValidateSite(ctx, t, in, true) })
	if err != nil {
		return err
	}
	send := answer(c, answerCreated(at("/v1/sites/", func(st cloud.Site) string { return st.ID }), renderSite))
	st, err := s.svc.CreateSite(c.Request().Context(), t, in)
	if err != nil {
		return err
	}
	return send(st)
}

func (s *Server) getSite(c echo.Context) error {
	id, err := pathID(c, "site_id", ids.Site)
	if err != nil {
		return err
	}
	st, err := s.svc.Store().Site(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "site", id)
	}
	return c.JSON(http.StatusOK, renderSite(st))
}

func (s *Server) updateSite(c echo.Context) error {
	id, err := pathID(c, "site_id", ids.Site)
	if err != nil {
		return err
	}
	t := tenant(c)
	in, err := decode(c, false, parseSite, func(ctx context.Context, in cloud.SiteInput) error { return s.svc.ValidateSite(ctx, t, in, false) })
	if err != nil {
		return err
	}
	st, err := s.svc.UpdateSite(c.Request().Context(), t, id, in)
	if err != nil {
		return notFoundAs(err, "site", id)
	}
	return c.JSON(http.StatusOK, renderSite(st))
}

// checkFilters returns the query's problems, adding one for each ID filter
// (query.id) that names no object of the tenant: another organisation's or
// mode's ID is 422 at query.<name>, as docs/decisions.md promises, never an
// empty page that would tell the caller nothing. The lookups are skipped
// when the query already has problems.
func (s *Server) checkFilters(ctx context.Context, q *query, t cloud.Tenant) error {
	for _, r := range q.refs {
		if len(q.errs) > 0 {
			break
		}
		find, ok := filterLookups[r.prefix]
		if !ok {
			return fmt.Errorf("query.%s: no lookup for %s IDs", r.param, r.prefix)
		}
		if err := find(ctx, s.svc.Store(), t, r.id); errors.Is(err, cloud.ErrNotFound) {
			q.errs.add("query."+r.param, "no %s with this ID", filterKinds[r.prefix])
		} else if err != nil {
			return err
		}
	}
	return q.errs.err()
}

// filterLookups find an object of the tenant by ID, per ID prefix, for
// checkFilters.
var filterLookups = map[string]func(context.Context, cloud.Store, cloud.Tenant, string) error{
	ids.Site:            lookup(cloud.Store.Site),
	ids.Person:          lookup(cloud.Store.Person),
	ids.Team:            lookup(cloud.Store.Team),
	ids.Visit:           lookup(cloud.Store.Visit),
	ids.Visitor:         lookup(cloud.Store.Visitor),
	ids.BookingType:     lookup(cloud.Store.BookingType),
	ids.TimesheetPeriod: lookup(cloud.Store.TimesheetPeriod),
	ids.Event:           lookup(cloud.Store.Event),
}

// filterKinds name the objects in the problem's message.
var filterKinds = map[string]string{
	ids.Site: "site", ids.Person: "person", ids.Team: "team", ids.Visit: "visit", ids.Visitor: "visitor",
	ids.BookingType: "booking type", ids.TimesheetPeriod: "timesheet period", ids.Event: "event",
}

func lookup[T any](get func(cloud.Store, context.Context, cloud.Tenant, string) (T, error)) func(context.Context, cloud.Store, cloud.Tenant, string) error {
	return func(ctx context.Context, st cloud.Store, t cloud.Tenant, id string) error {
		_, err := get(st, ctx, t, id)
		return err
	}
}

// notFoundAs names the object in a not_found problem.
func notFoundAs(err error, kind, id string) error {
	if errors.Is(err, cloud.ErrNotFound) {
		return notFound(kind, id)
	}
	return err
}

// Gates.

type gateJSON struct {
	ID        string `json:"id"`
	SiteID    string `json:"site_id"`
	Name      string `json:"name"`
	Direction string `json:"direction"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

func renderGate(g cloud.Gate) gateJSON {
	return gateJSON{ID: g.ID, SiteID: g.SiteID, Name: g.Name, Direction: string(g.Direction), CreatedAt: ts(g.CreatedAt), UpdatedAt: ts(g.UpdatedAt)}
}

func parseGate(create bool) func(*body) cloud.GateInput {
	return func(b *body) cloud.GateInput {
		in := cloud.GateInput{Name: b.str("name")}
		if create {
			in.SiteID = b.str("site_id")
		}
		if d := b.str("direction"); d.Set {
			in.Direction = cloud.Some(cloud.Direction(d.Value))
		}
		return in
	}
}

func (s *Server) listGates(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "site_id")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.GateFilter{SiteID: q.id("site_id", ids.Site)}
	scope := "gates\x00" + t.OrgID + "\x00" + string(t.Mode) + "\x00" + f.SiteID
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.Store().ListGates(c.Request().Context(), t, f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(r cloud.Gate) cloud.Position {
		return cloud.Position{CreatedAt: r.CreatedAt, ID: r.ID}
	}, renderGate))
}

func (s *Server) createGate(c echo.Context) error {
	t := tenant(c)
	in, err := decode(c, false, parseGate(true), func(ctx context.Context, in cloud.GateInput) error { return s.svc.ValidateGate(ctx, t, in, true) })
	if err != nil {
		return err
	}
	send := answer(c, answerCreated(at("/v1/gates/", func(g cloud.Gate) string { return g.ID }), renderGate))
	g, err := s.svc.CreateGate(c.Request().Context(), t, in)
	if err != nil {
		return err
	}
	return send(g)
}

func (s *Server) getGate(c echo.Context) error {
	id, err := pathID(c, "gate_id", ids.Gate)
	if err != nil {
		return err
	}
	g, err := s.svc.Store().Gate(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "gate", id)
	}
	return c.JSON(http.StatusOK, renderGate(g))
}

func (s *Server) updateGate(c echo.Context) error {
	id, err := pathID(c, "gate_id", ids.Gate)
	if err != nil {
		return err
	}
	t := tenant(c)
	in, err := decode(c, false, parseGate(false), func(ctx context.Context, in cloud.GateInput) error { return s.svc.ValidateGate(ctx, t, in, false) })
	if err != nil {
		return err
	}
	g, err := s.svc.UpdateGate(c.Request().Context(), t, id, in)
	if err != nil {
		return notFoundAs(err, "gate", id)
	}
	return c.JSON(http.StatusOK, renderGate(g))
}

// People.

type personJSON struct {
	ID            string  `json:"id"`
	Name          string  `json:"name"`
	Email         *string `json:"email"`
	Phone         *string `json:"phone"`
	JobTitle      *string `json:"job_title"`
	SiteID        *string `json:"site_id"`
	Active        bool    `json:"active"`
	DeactivatedAt *string `json:"deactivated_at"`
	PassIssuedAt  string  `json:"pass_issued_at"`
	CreatedAt     string  `json:"created_at"`
	UpdatedAt     string  `json:"updated_at"`
}

func renderPerson(p cloud.Person) personJSON {
	return personJSON{ID: p.ID, Name: p.Name, Email: nullable(p.Email), Phone: nullable(p.Phone), JobTitle: nullable(p.JobTitle),
		SiteID: nullable(p.SiteID), Active: p.Active, DeactivatedAt: tsPtr(p.DeactivatedAt), PassIssuedAt: ts(p.PassIssuedAt),
		CreatedAt: ts(p.CreatedAt), UpdatedAt: ts(p.UpdatedAt)}
}

func parsePerson(b *body) cloud.PersonInput {
	return cloud.PersonInput{Name: b.str("name"), Email: b.nullableStr("email"), Phone: b.nullableStr("phone"),
		JobTitle: b.nullableStr("job_title"), SiteID: b.nullableStr("site_id")}
}

func (s *Server) listPeople(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "q", "site_id", "email", "active")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.PersonFilter{Query: cloud.Fold(q.text("q", cloud.MaxQueryLen)), SiteID: q.id("site_id", ids.Site),
		Email: q.text("email", cloud.MaxEmailLen), Active: q.boolean("active")}
	scope := "people\x00" + t.OrgID + "\x00" + string(t.Mode) + "\x00" + f.Query + "\x00" + f.SiteID + "\x00" + cloud.Fold(f.Email) + "\x00" + boolScope(f.Active)
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.Store().ListPeople(c.Request().Context(), t, f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(r cloud.Person) cloud.Position {
		return cloud.Position{CreatedAt: r.CreatedAt, ID: r.ID}
	}, renderPerson))
}

func boolScope(b *bool) string {
	switch {
	case b == nil:
		return "-"
	case *b:
		return "1"
	}
	return "0"
}

func (s *Server) createPerson(c echo.Context) error {
	t := tenant(c)
	in, err := decode(c, false, parsePerson, func(ctx context.Context, in cloud.PersonInput) error { return s.svc.ValidatePerson(ctx, t, in, true) })
	if err != nil {
		return err
	}
	send := answer(c, answerCreated(at("/v1/people/", func(p cloud.Person) string { return p.ID }), renderPerson))
	p, err := s.svc.CreatePerson(c.Request().Context(), t, in)
	if err != nil {
		return err
	}
	return send(p)
}

func (s *Server) getPerson(c echo.Context) error {
	id, err := pathID(c, "person_id", ids.Person)
	if err != nil {
		return err
	}
	p, err := s.svc.Store().Person(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "person", id)
	}
	return c.JSON(http.StatusOK, renderPerson(p))
}

func (s *Server) updatePerson(c echo.Context) error {
	id, err := pathID(c, "person_id", ids.Person)
	if err != nil {
		return err
	}
	t := tenant(c)
	in, err := decode(c, false, parsePerson, func(ctx context.Context, in cloud.PersonInput) error { return s.svc.ValidatePerson(ctx, t, in, false) })
	if err != nil {
		return err
	}
	p, err := s.svc.UpdatePerson(c.Request().Context(), t, id, in)
	if err != nil {
		return notFoundAs(err, "person", id)
	}
	return c.JSON(http.StatusOK, renderPerson(p))
}

func (s *Server) deactivatePerson(c echo.Context) error { return s.setActive(c, false) }
func (s *Server) reactivatePerson(c echo.Context) error { return s.setActive(c, true) }

func (s *Server) setActive(c echo.Context, active bool) error {
	id, err := pathID(c, "person_id", ids.Person)
	if err != nil {
		return err
	}
	if _, err := decode(c, true, func(*body) struct{} { return struct{}{} }, func(context.Context, struct{}) error { return nil }); err != nil {
		return err
	}
	send := answer(c, answerOK(renderPerson))
	p, err := s.svc.SetPersonActive(c.Request().Context(), tenant(c), id, active)
	if err != nil {
		return notFoundAs(err, "person", id)
	}
	return send(p)
}

// Teams.

type memberJSON struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	JobTitle *string `json:"job_title"`
	Active   bool    `json:"active"`
}

type teamJSON struct {
	ID                string       `json:"id"`
	Name              string       `json:"name"`
	SiteID            *string      `json:"site_id"`
	LeadID            *string      `json:"lead_id"`
	VisitorsCanChoose bool         `json:"visitors_can_choose"`
	Archived          bool         `json:"archived"`
	Members           []memberJSON `json:"members"`
	CreatedAt         string       `json:"created_at"`
	UpdatedAt         string       `json:"updated_at"`
}

func renderTeam(tm cloud.Team) teamJSON {
	out := teamJSON{ID: tm.ID, Name: tm.Name, SiteID: nullable(tm.SiteID), LeadID: nullable(tm.LeadID),
		VisitorsCanChoose: tm.VisitorsCanChoose, Archived: tm.Archived, Members: make([]memberJSON, len(tm.Members)),
		CreatedAt: ts(tm.CreatedAt), UpdatedAt: ts(tm.UpdatedAt)}
	for i, m := range tm.Members {
		out.Members[i] = memberJSON{ID: m.ID, Name: m.Name, JobTitle: nullableAt(&tm.Members[i].JobTitle), Active: m.Active}
	}
	return out
}

func parseTeam(create bool) func(*body) cloud.TeamInput {
	return func(b *body) cloud.TeamInput {
		in := cloud.TeamInput{Name: b.str("name"), SiteID: b.nullableStr("site_id"), LeadID: b.nullableStr("lead_id"),
			MemberIDs: b.strings("member_ids"), VisitorsCanChoose: b.boolean("visitors_can_choose")}
		if !create {
			in.Archived = b.boolean("archived")
		}
		return in
	}
}

func (s *Server) listTeams(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "q", "site_id", "visitors_can_choose", "include_archived")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.TeamFilter{Query: cloud.Fold(q.text("q", cloud.MaxQueryLen)), SiteID: q.id("site_id", ids.Site),
		VisitorsCanChoose: q.boolean("visitors_can_choose")}
	if b := q.boolean("include_archived"); b != nil {
		f.IncludeArchived = *b
	}
	scope := "teams\x00" + t.OrgID + "\x00" + string(t.Mode) + "\x00" + f.Query + "\x00" + f.SiteID + "\x00" +
		boolScope(f.VisitorsCanChoose) + "\x00" + boolScope(&f.IncludeArchived)
	p := s.page(q, scope)
	ctx := c.Request().Context()
	if err := s.checkFilters(ctx, q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.Store().ListTeams(ctx, t, f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(r cloud.Team) cloud.Position {
		return cloud.Position{CreatedAt: r.CreatedAt, ID: r.ID}
	}, renderTeam))
}

func (s *Server) createTeam(c echo.Context) error {
	t := tenant(c)
	in, err := decode(c, false, parseTeam(true), func(ctx context.Context, in cloud.TeamInput) error { return s.svc.ValidateTeam(ctx, t, in, true) })
	if err != nil {
		return err
	}
	send := answer(c, answerCreated(at("/v1/teams/", func(tm cloud.Team) string { return tm.ID }), renderTeam))
	tm, err := s.svc.CreateTeam(c.Request().Context(), t, in)
	if err != nil {
		return err
	}
	return send(tm)
}

func (s *Server) getTeam(c echo.Context) error {
	id, err := pathID(c, "team_id", ids.Team)
	if err != nil {
		return err
	}
	tm, err := s.svc.Store().Team(c.Request().Context(), tenant(c), id)
	if err != nil {
		return notFoundAs(err, "team", id)
	}
	return c.JSON(http.StatusOK, renderTeam(tm))
}

func (s *Server) updateTeam(c echo.Context) error {
	id, err := pathID(c, "team_id", ids.Team)
	if err != nil {
		return err
	}
	t := tenant(c)
	in, err := decode(c, false, parseTeam(false), func(ctx context.Context, in cloud.TeamInput) error { return s.svc.ValidateTeam(ctx, t, in, false) })
	if err != nil {
		return err
	}
	tm, err := s.svc.UpdateTeam(c.Request().Context(), t, id, in)
	if err != nil {
		return notFoundAs(err, "team", id)
	}
	return c.JSON(http.StatusOK, renderTeam(tm))
}
