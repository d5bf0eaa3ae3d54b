package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/skip2/go-qrcode"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/problem"
)

// Visit types and forms.

type publicFormJSON struct {
	Version int             `json:"version"`
	Schema  json.RawMessage `json:"schema"`
}

type visitTypeJSON struct {
	Key             string          `json:"key"`
	Name            string          `json:"name"`
	Enabled         bool            `json:"enabled"`
	PreRegistration bool            `json:"pre_registration"`
	NeedsApproval   bool            `json:"needs_approval"`
	PassRules       passRulesJSON   `json:"pass_rules"`
	FormVersion     int             `json:"form_version"`
	PublicForm      *publicFormJSON `json:"public_form"`
	CreatedAt       string          `json:"created_at"`
	UpdatedAt       string          `json:"updated_at"`
}

func renderVisitType(v cloud.VisitTypeView) visitTypeJSON {
	out := visitTypeJSON{Key: v.Key, Name: v.Name, Enabled: v.Enabled, PreRegistration: v.PreRegistration,
		NeedsApproval: v.NeedsApproval, PassRules: renderRules(v.PassRules), FormVersion: v.FormVersion,
		CreatedAt: ts(v.CreatedAt), UpdatedAt: ts(v.UpdatedAt)}
	if v.PublicForm != nil {
		out.PublicForm = &publicFormJSON{Version: v.FormVersion, Schema: v.PublicForm}
	}
	return out
}

type formJSON struct {
	VisitType string          `json:"visit_type"`
	Version   int             `json:"version"`
	Schema    json.RawMessage `json:"schema"`
}

func renderForm(v cloud.VisitTypeView) formJSON {
	return formJSON{VisitType: v.Key, Version: v.FormVersion, Schema: v.Form}
}

func (s *Server) visitTypePage(c echo.Context, kind string) (*query, cloud.Page, string, error) {
	q, err := parseQuery(c, "limit", "cursor")
	if err != nil {
		return nil, cloud.Page{}, "", err
	}
	t := tenant(c)
	public := principal(c).Key.Kind == cloud.KindPublishable
	scope := kind + "\x00" + t.OrgID + "\x00" + string(t.Mode) + "\x00" + boolScope(&public)
	p := s.page(q, scope)
	return q, p, scope, q.errs.err()
}

func (s *Server) listVisitTypes(c echo.Context) error {
	_, p, scope, err := s.visitTypePage(c, "visit-types")
	if err != nil {
		return err
	}
	a := cloud.ActorOf(principal(c))
	rows, more, err := s.svc.ListVisitTypes(c.Request().Context(), a.Tenant, a.Publishable, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, visitTypePosition, renderVisitType))
}

func visitTypePosition(v cloud.VisitTypeView) cloud.Position {
	return cloud.Position{CreatedAt: v.CreatedAt, ID: v.Key}
}

func (s *Server) getVisitType(c echo.Context) error {
	key := c.Param("visit_type")
	if !cloud.ValidVisitTypeKey(key) {
		return invalid("path.visit_type", "must be a visit type key (^[a-z][a-z0-9_]{0,39}$)")
	}
	a := cloud.ActorOf(principal(c))
	vt, err := s.svc.VisitType(c.Request().Context(), a.Tenant, key, a.Publishable)
	if err != nil {
		return notFoundAs(err, "visit type", key)
	}
	return c.JSON(http.StatusOK, renderVisitType(vt))
}

func (s *Server) listForms(c echo.Context) error {
	_, p, scope, err := s.visitTypePage(c, "forms")
	if err != nil {
		return err
	}
	rows, more, err := s.svc.ListVisitTypes(c.Request().Context(), tenant(c), false, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, visitTypePosition, renderForm))
}

// Pass rules.

type dailyJSON struct {
	From  string `json:"from"`
	Until string `json:"until"`
}

type windowJSON struct {
	Before int `json:"before"`
	After  int `json:"after"`
}

type passRulesJSON struct {
	Daily     *dailyJSON `json:"daily"`
	Window    windowJSON `json:"window"`
	SingleUse bool       `json:"single_use"`
	GateIDs   []string   `json:"gate_ids"`
}

func renderRules(r passrule.Rules) passRulesJSON {
	out := passRulesJSON{Window: windowJSON{Before: r.Window.Before, After: r.Window.After}, SingleUse: r.SingleUse, GateIDs: r.GateIDs}
	if out.GateIDs == nil {
		out.GateIDs = []string{}
	}
	if r.Daily != nil {
		out.Daily = &dailyJSON{From: r.Daily.From.String(), Until: r.Daily.Until.String()}
	}
	return out
}

// rules reads a pass rules object: every member optional, defaulting to no
// limit of that kind.
func (b *body) rules(name string) cloud.Optional[*passrule.Rules] {
	var r passrule.Rules
	present, isNull := b.object(name, false, func(nb *body) {
		nb.object("daily", true, func(d *body) {
			before := len(*d.errs)
			defer func() {
				if len(*d.errs) > before {
					r.Daily = nil // reported already; do not judge half-read hours
				}
			}()
			r.Daily = &passrule.Daily{}
			for _, part := range []struct {
				name string
				dst  *passrule.Clock
			}{{"from", &r.Daily.From}, {"until", &r.Daily.Until}} {
				v := d.str(part.name)
				if !v.Set {
					if !hasLocation(*d.errs, d.loc(part.name)) {
						d.errs.add(d.loc(part.name), "is required: a time of day HH:MM")
					}
					continue
				}
				c, err := passrule.ParseClock(v.Value)
				if err != nil {
					d.errs.add(d.loc(part.name), "must be a time of day HH:MM from 00:00 to 23:59")
					continue
				}
				*part.dst = c
			}
		})
		nb.object("window", false, func(w *body) {
			r.Window.Before = w.integer("before", 0, passrule.MaxWindowMinutes).Value
			r.Window.After = w.integer("after", 0, passrule.MaxWindowMinutes).Value
		})
		r.SingleUse = nb.boolean("single_use").Value
		r.GateIDs = nb.strings("gate_ids").Value
	})
	if !present || isNull {
		if present {
			return cloud.Some[*passrule.Rules](nil)
		}
		return cloud.Optional[*passrule.Rules]{}
	}
	if r.GateIDs == nil {
		r.GateIDs = []string{}
	}
	return cloud.Some(&r)
}

func hasLocation(errs fieldErrors, loc string) bool {
	for _, e := range errs {
		if e.Location == loc {
			return true
		}
	}
	return false
}

// Visits.

type hostJSON struct {
	ID            string  `json:"id"`
	Name          string  `json:"name"`
	Role          string  `json:"role"`
	State         string  `json:"state"`
	Answer        *string `json:"answer"`
	AnswerMinutes *int    `json:"answer_minutes"`
	AskedAt       *string `json:"asked_at"`
	AnsweredAt    *string `json:"answered_at"`
}

type refJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type visitorSummaryJSON struct {
	ID      string  `json:"id"`
	Name    *string `json:"name"`
	Phone   *string `json:"phone"`
	Email   *string `json:"email"`
	Company *string `json:"company"`
}

type decisionJSON struct {
	Outcome   string  `json:"outcome"`
	DecidedAt string  `json:"decided_at"`
	DecidedBy string  `json:"decided_by"`
	Reason    *string `json:"reason"`
}

type rescheduledJSON struct {
	VisitID   *string `json:"visit_id"`
	BookingID *string `json:"booking_id"`
	At        string  `json:"at"`
}

type passJSON struct {
	Channels   []string      `json:"channels"`
	LastSentAt *string       `json:"last_sent_at"`
	Rules      passRulesJSON `json:"rules"`
	ForVisitID string        `json:"for_visit_id"`
}

type visitJSON struct {
	ID            string                     `json:"id"`
	Status        string                     `json:"status"`
	Type          string                     `json:"type"`
	Source        string                     `json:"source"`
	SiteID        string                     `json:"site_id"`
	GateID        *string                    `json:"gate_id"`
	HostID        *string                    `json:"host_id"`
	Audience      string                     `json:"audience"`
	Hosts         []hostJSON                 `json:"hosts"`
	Team          *refJSON                   `json:"team"`
	AskedFor      *refJSON                   `json:"asked_for"`
	NeedsSomeone  bool                       `json:"needs_someone"`
	Visitor       visitorSummaryJSON         `json:"visitor"`
	Purpose       *string                    `json:"purpose"`
	VehiclePlate  string                     `json:"vehicle_plate,omitempty"`
	ExpectedAt    *string                    `json:"expected_at"`
	ExpectedUntil *string                    `json:"expected_until"`
	CheckedInAt   *string                    `json:"checked_in_at"`
	CheckedOutAt  *string                    `json:"checked_out_at"`
	CancelledAt   *string                    `json:"cancelled_at"`
	Decision      *decisionJSON              `json:"decision"`
	BookingID     *string                    `json:"booking_id"`
	RescheduledTo *rescheduledJSON           `json:"rescheduled_to"`
	Pass          passJSON                   `json:"pass"`
	CustomFields  map[string]json.RawMessage `json:"custom_fields"`
	CreatedAt     string                     `json:"created_at"`
	UpdatedAt     string                     `json:"updated_at"`
}

func renderRef(r *cloud.Ref) *refJSON {
	if r == nil {
		return nil
	}
	return &refJSON{ID: r.ID, Name: r.Name}
}

func renderVisit(v cloud.Visit) visitJSON {
	out := visitJSON{ID: v.ID, Status: string(v.Status), Type: v.Type, Source: string(v.Source), SiteID: v.SiteID,
		GateID: nullable(v.GateID), HostID: nullable(v.HostID), Audience: string(v.Audience), Hosts: make([]hostJSON, len(v.Hosts)),
		Team: renderRef(v.Team), AskedFor: renderRef(v.AskedFor), NeedsSomeone: v.NeedsSomeone,
		Visitor: visitorSummaryJSON{ID: v.VisitorID, Name: nullable(v.Visitor.Name), Phone: nullable(v.Visitor.Phone),
			Email: nullable(v.Visitor.Email), Company: nullable(v.Visitor.Company)},
		Purpose: nullable(v.Purpose), VehiclePlate: v.VehiclePlate, ExpectedAt: tsPtr(v.ExpectedAt), ExpectedUntil: tsPtr(v.ExpectedUntil),
		CheckedInAt: tsPtr(v.CheckedInAt), CheckedOutAt: tsPtr(v.CheckedOutAt), CancelledAt: tsPtr(v.CancelledAt),
		BookingID: nullable(v.BookingID),
		Pass: passJSON{Channels: v.Pass.Channels, LastSentAt: tsPtr(v.Pass.LastSentAt), Rules: renderRules(v.Pass.Rules),
			ForVisitID: v.Pass.ForVisitID},
		CustomFields: v.CustomFields, CreatedAt: ts(v.CreatedAt), UpdatedAt: ts(v.UpdatedAt)}
	for i, h := range v.Hosts {
		out.Hosts[i] = hostJSON{ID: h.ID, Name: h.Name, Role: h.Role, State: h.State, Answer: nullable(h.Answer),
			AnswerMinutes: h.AnswerMinutes, AskedAt: tsPtr(h.AskedAt), AnsweredAt: tsPtr(h.AnsweredAt)}
	}
	if out.Pass.Channels == nil {
		out.Pass.Channels = []string{}
	}
	if out.Pass.ForVisitID == "" {
		out.Pass.ForVisitID = v.ID
	}
	if out.CustomFields == nil {
		out.CustomFields = map[string]json.RawMessage{}
	}
	if d := v.Decision; d != nil {
		out.Decision = &decisionJSON{Outcome: d.Outcome, DecidedAt: ts(d.DecidedAt), DecidedBy: d.DecidedBy, Reason: nullable(d.Reason)}
	}
	if r := v.RescheduledTo; r != nil {
		out.RescheduledTo = &rescheduledJSON{VisitID: nullable(r.VisitID), BookingID: nullable(r.BookingID), At: ts(r.At)}
	}
	return out
}

func parseVisit(create bool) func(*body) cloud.VisitInput {
	return func(b *body) cloud.VisitInput {
		var in cloud.VisitInput
		if create {
			in.SiteID = b.str("site_id")
			in.Audience = b.str("audience")
			in.HostID = b.str("host_id")
			in.HostIDs = b.strings("host_ids")
			in.TeamID = b.str("team_id")
			var vin cloud.VisitorInput
			if present, isNull := b.object("visitor", false, func(vb *body) {
				vin.Name, vin.Phone, vin.Email, vin.Company = vb.str("name"), vb.nullableStr("phone"), vb.nullableStr("email"), vb.nullableStr("company")
			}); present && !isNull {
				in.Visitor = cloud.Some(&vin)
			}
			in.SendPass = b.boolean("send_pass")
			in.PassChannels = b.strings("pass_channels")
			in.WalkIn = b.boolean("walk_in")
		}
		in.Type = b.str("type")
		in.ExpectedAt = b.timestamp("expected_at", false)
		in.ExpectedUntil = b.timestamp("expected_until", true)
		in.Purpose = b.nullableStr("purpose")
		in.VehiclePlate = b.nullableStr("vehicle_plate")
		in.CustomFields = b.rawObject("custom_fields")
		in.PassRules = b.rules("pass_rules")
		return in
	}
}

var visitStatuses = func() []string {
	out := make([]string, len(cloud.VisitStatuses))
	for i, s := range cloud.VisitStatuses {
		out[i] = string(s)
	}
	return out
}()

func (q *query) timestamp(name string) *time.Time {
	v, ok := q.get(name)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		q.errs.add("query."+name, "must be an RFC 3339 date-time with a zone, such as 2026-05-01T09:30:00Z")
		return nil
	}
	return &t
}

func (s *Server) listVisits(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "status", "type", "site_id", "host_id", "visitor_id", "expected_from", "expected_before", "waiting_with")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.VisitFilter{SiteID: q.id("site_id", ids.Site), HostID: q.id("host_id", ids.Person),
		VisitorID: q.id("visitor_id", ids.Visitor), ExpectedFrom: q.timestamp("expected_from"), ExpectedBefore: q.timestamp("expected_before")}
	if v, ok := q.get("status"); ok {
		for _, st := range strings.Split(v, ",") {
			if !slices.Contains(visitStatuses, st) {
				q.errs.add("query.status", "must be one or more of %s, separated by commas", strings.Join(visitStatuses, ", "))
				break
			}
			f.Status = append(f.Status, cloud.VisitStatus(st))
		}
	}
	if v, ok := q.get("type"); ok {
		if !cloud.ValidVisitTypeKey(v) {
			q.errs.add("query.type", "must be a visit type key (^[a-z][a-z0-9_]{0,39}$)")
		}
		f.Type = v
	}
	if f.ExpectedFrom != nil && f.ExpectedBefore != nil && !f.ExpectedBefore.After(*f.ExpectedFrom) {
		q.errs.add("query.expected_before", "must be after expected_from")
	}
	if v, ok := q.get("waiting_with"); ok {
		switch {
		case v == cloud.Reception:
		case ids.Valid(ids.Person, v):
			q.refs = append(q.refs, queryRef{param: "waiting_with", prefix: ids.Person, id: v})
		case ids.Valid(ids.Team, v):
			q.refs = append(q.refs, queryRef{param: "waiting_with", prefix: ids.Team, id: v})
		default:
			q.errs.add("query.waiting_with", "must be reception, a person ID or a team ID")
		}
		f.WaitingWith = v
	}
	statuses := make([]string, len(f.Status))
	for i, st := range f.Status {
		statuses[i] = string(st)
	}
	scope := strings.Join([]string{"visits", t.OrgID, string(t.Mode), strings.Join(statuses, ","), f.Type, f.SiteID, f.HostID,
		f.VisitorID, timeScope(f.ExpectedFrom), timeScope(f.ExpectedBefore), f.WaitingWith}, "\x00")
	p := s.page(q, scope)
	ctx := c.Request().Context()
	if err := s.checkFilters(ctx, q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.ListVisits(ctx, cloud.ActorOf(principal(c)), f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(v cloud.Visit) cloud.Position {
		return cloud.Position{CreatedAt: v.CreatedAt, ID: v.ID}
	}, renderVisit))
}

func timeScope(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (s *Server) createVisit(c echo.Context) error {
	a := cloud.ActorOf(principal(c))
	in, err := decode(c, false, parseVisit(true), func(ctx context.Context, in cloud.VisitInput) error { return s.svc.ValidateVisit(ctx, a, in) })
	if err != nil {
		return err
	}
	send := answer(c, answerCreated(visitLocation, renderVisit))
	v, err := s.svc.CreateVisit(c.Request().Context(), a, in)
	if err != nil {
		return err
	}
	return send(v)
}

var visitLocation = at("/v1/visits/", func(v cloud.Visit) string { return v.ID })

func (s *Server) getVisit(c echo.Context) error {
	id, err := pathID(c, "visit_id", ids.Visit)
	if err != nil {
		return err
	}
	v, err := s.svc.Visit(c.Request().Context(), cloud.ActorOf(principal(c)), id)
	if err != nil {
		return notFoundAs(err, "visit", id)
	}
	return c.JSON(http.StatusOK, renderVisit(v))
}

func (s *Server) updateVisit(c echo.Context) error {
	id, err := pathID(c, "visit_id", ids.Visit)
	if err != nil {
		return err
	}
	b, err := readBody(c, false)
	if err != nil {
		return err
	}
	in := parseVisit(false)(b)
	if err := b.done(); err != nil {
		return err
	}
	v, err := s.svc.UpdateVisit(c.Request().Context(), cloud.ActorOf(principal(c)), id, in)
	if err != nil {
		return notFoundAs(err, "visit", id)
	}
	return c.JSON(http.StatusOK, renderVisit(v))
}

// visitAction is a POST on one visit whose optional body parse reads.
func (s *Server) visitAction(parse func(*body), act func(ctx context.Context, a cloud.Actor, id string) (cloud.Visit, error)) echo.HandlerFunc {
	return objectAction("visit_id", ids.Visit, "visit", parse, act, renderVisit)
}

// objectAction is a POST on one object, named by the path parameter
// param, whose optional body parse reads; act does it and render shows
// the object as it is after.
func objectAction[O, J any](param, prefix, kind string, parse func(*body),
	act func(ctx context.Context, a cloud.Actor, id string) (O, error), render func(O) J) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, param, prefix)
		if err != nil {
			return err
		}
		b, err := readBody(c, true)
		if err != nil {
			return err
		}
		if parse != nil {
			parse(b)
		}
		if err := b.done(); err != nil {
			return err
		}
		send := answer(c, answerOK(render))
		o, err := act(c.Request().Context(), cloud.ActorOf(principal(c)), id)
		if err != nil {
			return notFoundAs(err, kind, id)
		}
		return send(o)
	}
}

// parseEntry reads the body of a check-in or re-entry.
func parseEntry(b *body, in *cloud.CheckInInput) {
	if g := b.str("gate_id"); g.Set && g.Value == "" {
		b.errs.add(b.loc("gate_id"), "must be a gate ID; leave it out for an entry at the desk")
	} else {
		in.GateID = g.Value
	}
	in.Override = b.boolean("override_pass_rules").Value
}

func (s *Server) checkIn(c echo.Context) error {
	var in cloud.CheckInInput
	return s.visitAction(func(b *body) { parseEntry(b, &in) }, func(ctx context.Context, a cloud.Actor, id string) (cloud.Visit, error) {
		return s.svc.CheckIn(ctx, a, id, in)
	})(c)
}

func (s *Server) checkOut(c echo.Context) error {
	return s.visitAction(nil, s.svc.CheckOut)(c)
}

func (s *Server) decideVisit(outcome string) echo.HandlerFunc {
	return func(c echo.Context) error {
		var reason string
		return s.visitAction(func(b *body) { reason = b.nullableStr("reason").Value },
			func(ctx context.Context, a cloud.Actor, id string) (cloud.Visit, error) {
				return s.svc.Decide(ctx, a, id, outcome, reason)
			})(c)
	}
}

func (s *Server) cancelVisit(c echo.Context) error {
	return s.visitAction(nil, s.svc.Cancel)(c)
}

func (s *Server) resendPass(c echo.Context) error {
	var channels []string
	return s.visitAction(func(b *body) {
		if v := b.strings("channels"); v.Set {
			channels = v.Value
		}
	}, func(ctx context.Context, a cloud.Actor, id string) (cloud.Visit, error) {
		return s.svc.ResendPass(ctx, a, id, channels)
	})(c)
}

// passPNG serves the visit's QR pass: its signed token at error
// correction M.
func (s *Server) passPNG(c echo.Context) error {
	id, err := pathID(c, "visit_id", ids.Visit)
	if err != nil {
		return err
	}
	tok, err := s.svc.PassToken(c.Request().Context(), cloud.ActorOf(principal(c)), id)
	if err != nil {
		return notFoundAs(err, "visit", id)
	}
	png, err := qrcode.Encode(tok, qrcode.Medium, 512)
	if err != nil {
		return fmt.Errorf("encode pass of %s: %w", id, err)
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.Blob(http.StatusOK, "image/png", png)
}

// passByLink serves a visit's pass to the visitor through the link in
// their message: no key; a link that is not one of ours is not found.
// Having no key to count against, it is limited per client address (every
// request, links that are not ours included, before any other work) and per
// link (once the link is known to be ours), so neither one client nor many
// clients with one link can spend the server's time signing and drawing
// passes.
func (s *Server) passByLink(c echo.Context) error {
	ctx := c.Request().Context()
	byAddress, err := s.count(ctx, counterKey("pass-address", addressBucket(s.clients.of(c.Request()))), s.passes.address)
	if err != nil {
		return err
	}
	if _, spent := limitHeaders(c, byAddress); spent {
		noted(c).limit = "pass_address"
		return newError(problem.RateLimited, "This address made its %d pass requests for this minute; retry after %d seconds.", byAddress.limit, byAddress.reset)
	}
	t, visitID, err := s.svc.OpenPassLink(c.Param("link"))
	if errors.Is(err, cloud.ErrNotFound) {
		return newError(problem.NotFound, "No pass is at this link.")
	}
	if err != nil {
		return err
	}
	byLink, err := s.count(ctx, counterKey("pass-link", string(t.Mode)+":"+visitID), s.passes.link)
	if err != nil {
		return err
	}
	if b, spent := limitHeaders(c, byAddress, byLink); spent {
		noted(c).limit = "pass_link"
		if b == byAddress {
			noted(c).limit = "pass_address"
		}
		return newError(problem.RateLimited, "This pass was opened %d times this minute, the most allowed; retry after %d seconds.", b.limit, b.reset)
	}
	tok, err := s.svc.LinkedPass(ctx, t, visitID)
	if errors.Is(err, cloud.ErrNotFound) {
		return newError(problem.NotFound, "No pass is at this link.")
	}
	if err != nil {
		return err
	}
	png, err := qrcode.Encode(tok, qrcode.Medium, 512)
	if err != nil {
		return fmt.Errorf("encode pass: %w", err)
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	c.Response().Header().Set("Referrer-Policy", "no-referrer")
	return c.Blob(http.StatusOK, "image/png", png)
}

// Outbox.

type messageJSON struct {
	ID        string  `json:"id"`
	VisitID   *string `json:"visit_id"`
	Channel   string  `json:"channel"`
	To        string  `json:"to"`
	Subject   string  `json:"subject"`
	Body      string  `json:"body"`
	Status    string  `json:"status"`
	CreatedAt string  `json:"created_at"`
}

func renderMessage(m cloud.Message) messageJSON {
	return messageJSON{ID: m.ID, VisitID: nullable(m.VisitID), Channel: m.Channel, To: m.To, Subject: m.Subject, Body: m.Body,
		Status: m.Status, CreatedAt: ts(m.CreatedAt)}
}

func (s *Server) listMessages(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "visit_id")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.MessageFilter{VisitID: q.id("visit_id", ids.Visit)}
	scope := "messages\x00" + t.OrgID + "\x00" + string(t.Mode) + "\x00" + f.VisitID
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.Messages(c.Request().Context(), cloud.ActorOf(principal(c)), f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(m cloud.Message) cloud.Position {
		return cloud.Position{CreatedAt: m.CreatedAt, ID: m.ID}
	}, renderMessage))
}
