package httpapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
)

// Audit trail.

type auditEventJSON struct {
	ID         string          `json:"id"`
	Action     string          `json:"action"`
	ActorKind  string          `json:"actor_kind"`
	ActorID    *string         `json:"actor_id"`
	ObjectType string          `json:"object_type"`
	ObjectID   string          `json:"object_id"`
	RequestID  *string         `json:"request_id"`
	Detail     json.RawMessage `json:"detail"`
	CreatedAt  string          `json:"created_at"`
}

func renderAuditEvent(e cloud.AuditEvent) auditEventJSON {
	out := auditEventJSON{ID: e.ID, Action: e.Action, ActorKind: e.ActorKind, ActorID: nullable(e.ActorID),
		ObjectType: e.ObjectType, ObjectID: e.ObjectID, RequestID: nullable(e.RequestID), Detail: e.Detail,
		CreatedAt: ts(e.CreatedAt)}
	if len(out.Detail) == 0 {
		out.Detail = json.RawMessage(`{}`)
	}
	return out
}

var auditAction = regexp.MustCompile(`^[a-z][a-z_]*(\.[a-z][a-z_]*)+$`)

func (s *Server) listAuditEvents(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "action", "object_id")
	if err != nil {
		return err
	}
	t := tenant(c)
	var f cloud.AuditFilter
	if v, ok := q.get("action"); ok {
		if len(v) > 80 || !auditAction.MatchString(v) {
			q.errs.add("query.action", "must be an action such as visit.pass_rules_overridden")
		}
		f.Action = v
	}
	f.ObjectID = q.text("object_id", 80)
	scope := strings.Join([]string{"audit-events", t.OrgID, string(t.Mode), f.Action, f.ObjectID}, "\x00")
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.AuditEvents(c.Request().Context(), cloud.ActorOf(principal(c)), f, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(e cloud.AuditEvent) cloud.Position {
		return cloud.Position{CreatedAt: e.CreatedAt, ID: e.ID}
	}, renderAuditEvent))
}
