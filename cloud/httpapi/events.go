package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// erasedVisitorJSON is visitor.erased's data: no personal data.
type erasedVisitorJSON struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	ErasedAt string `json:"erased_at"`
}

// RenderEvent is the cloud.EventRenderer of the API: an event's data is
// its object exactly as the API's own responses encode it.
func RenderEvent(obj any) (json.RawMessage, error) {
	var v any
	switch o := obj.(type) {
	case cloud.Visit:
		v = renderVisit(o)
	case cloud.Booking:
		v = renderBooking(o)
	case cloud.Person:
		v = renderPerson(o)
	case cloud.WebhookEndpoint:
		v = renderWebhookEndpoint(o)
	case cloud.AttendanceEvent:
		v = renderPunch(o)
	case cloud.Timesheet:
		v = renderTimesheet(o)
	case cloud.Edge:
		v = renderEdge(o)
	case cloud.ErasedVisitor:
		v = erasedVisitorJSON{ID: o.ID, Object: "visitor", ErasedAt: ts(o.ErasedAt)}
	default:
		return nil, fmt.Errorf("no API representation of %T", obj)
	}
	return json.Marshal(v)
}

// eventJSON is the envelope of an event, in GET /events and in every
// webhook delivery (docs/decisions.md, "Events").
type eventJSON struct {
	ID             string          `json:"id"`
	Object         string          `json:"object"`
	Type           string          `json:"type"`
	CreatedAt      string          `json:"created_at"`
	Mode           string          `json:"mode"`
	OrganisationID string          `json:"organisation_id"`
	RequestID      *string         `json:"request_id"`
	Data           json.RawMessage `json:"data"`
}

func renderEvent(e cloud.Event) eventJSON {
	return eventJSON{ID: e.ID, Object: "event", Type: e.Type, CreatedAt: ts(e.CreatedAt), Mode: string(e.Tenant.Mode),
		OrganisationID: e.Tenant.OrgID, RequestID: nullable(e.RequestID), Data: e.Data}
}

func (s *Server) listEvents(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "type", "created_from", "created_before")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.EventFilter{CreatedGTE: q.timestamp("created_from"), CreatedLT: q.timestamp("created_before")}
	if v, ok := q.get("type"); ok {
		if !cloud.ValidEventType(v) {
			q.errs.add("query.type", "must be an event type, such as visit.created")
		}
		f.Type = v
	}
	if f.CreatedGTE != nil && f.CreatedLT != nil && !f.CreatedLT.After(*f.CreatedGTE) {
		q.errs.add("query.created_before", "must be after created_from")
	}
	scope := strings.Join([]string{"events", t.OrgID, string(t.Mode), f.Type, timeScope(f.CreatedGTE), timeScope(f.CreatedLT)}, "\x00")
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.Events(c.Request().Context(), cloud.ActorOf(principal(c)), f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(e cloud.Event) cloud.Position {
		return cloud.Position{CreatedAt: e.CreatedAt, ID: e.ID}
	}, renderEvent))
}

func (s *Server) getEvent(c echo.Context) error {
	id, err := pathID(c, "event_id", ids.Event)
	if err != nil {
		return err
	}
	e, err := s.svc.Event(c.Request().Context(), cloud.ActorOf(principal(c)), id)
	if err != nil {
		return notFoundAs(err, "event", id)
	}
	return c.JSON(http.StatusOK, renderEvent(e))
}
