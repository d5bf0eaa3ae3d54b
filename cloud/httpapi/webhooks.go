package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// Webhook endpoints, their deliveries and attempts (docs/decisions.md,
// "Webhooks").

type webhookEndpointJSON struct {
	ID             string   `json:"id"`
	Object         string   `json:"object"`
	URL            string   `json:"url"`
	Description    *string  `json:"description"`
	EventTypes     []string `json:"event_types"`
	Status         string   `json:"status"`
	DisabledReason *string  `json:"disabled_reason"`
	// Secret is shown only in the responses of create and rotate-secret.
	Secret                   string  `json:"secret,omitempty"`
	PreviousSecretValidUntil *string `json:"previous_secret_valid_until"`
	FailingSince             *string `json:"failing_since"`
	CreatedAt                string  `json:"created_at"`
	UpdatedAt                string  `json:"updated_at"`
}

func renderWebhookEndpoint(e cloud.WebhookEndpoint) webhookEndpointJSON {
	out := webhookEndpointJSON{ID: e.ID, Object: "webhook_endpoint", URL: e.URL, Description: nullable(e.Description),
		EventTypes: e.EventTypes, Status: "enabled", FailingSince: tsPtr(e.FailingSince),
		CreatedAt: ts(e.CreatedAt), UpdatedAt: ts(e.UpdatedAt)}
	if e.Disabled {
		out.Status, out.DisabledReason = "disabled", nullable(e.DisabledReason)
	}
	if e.PrevUntil != nil {
		out.PreviousSecretValidUntil = tsPtr(e.PrevUntil)
	}
	return out
}

// withSecret is an endpoint as create and rotate-secret return it: the
// one time its secret is shown.
func withSecret(e cloud.WebhookEndpoint) webhookEndpointJSON {
	out := renderWebhookEndpoint(e)
	out.Secret = e.Secret
	return out
}

type webhookInput struct {
	URL         cloud.Optional[string]
	Description cloud.Optional[string]
	EventTypes  cloud.Optional[[]string]
}

func (in webhookInput) domain() cloud.WebhookInput {
	var out cloud.WebhookInput
	if in.URL.Set {
		out.URL = &in.URL.Value
	}
	if in.Description.Set {
		out.Description = &in.Description.Value
	}
	if in.EventTypes.Set {
		out.EventTypes = in.EventTypes.Value
	}
	return out
}

func parseWebhook(b *body) webhookInput {
	return webhookInput{URL: b.str("url"), Description: b.nullableStr("description"), EventTypes: b.strings("event_types")}
}

func (s *Server) createWebhookEndpoint(c echo.Context) error {
	a := cloud.ActorOf(principal(c))
	in, err := decode(c, false, parseWebhook, func(_ context.Context, in webhookInput) error {
		return s.svc.ValidateWebhookInput(a.Tenant.Mode, in.domain(), true)
	})
	if err != nil {
		return err
	}
	send := answer(c, answerCreated(at("/v1/webhook-endpoints/", func(e cloud.WebhookEndpoint) string { return e.ID }), withSecret))
	e, err := s.svc.CreateWebhookEndpoint(c.Request().Context(), a, in.domain())
	if err != nil {
		return err
	}
	return send(e)
}

func (s *Server) listWebhookEndpoints(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor")
	if err != nil {
		return err
	}
	t := tenant(c)
	scope := strings.Join([]string{"webhook-endpoints", t.OrgID, string(t.Mode)}, "\x00")
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.WebhookEndpoints(c.Request().Context(), cloud.ActorOf(principal(c)), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(e cloud.WebhookEndpoint) cloud.Position {
		return cloud.Position{CreatedAt: e.CreatedAt, ID: e.ID}
	}, renderWebhookEndpoint))
}

func (s *Server) getWebhookEndpoint(c echo.Context) error {
	id, err := pathID(c, "webhook_endpoint_id", ids.WebhookEndpoint)
	if err != nil {
		return err
	}
	e, err := s.svc.WebhookEndpoint(c.Request().Context(), cloud.ActorOf(principal(c)), id)
	if err != nil {
		return notFoundAs(err, "webhook endpoint", id)
	}
	return c.JSON(http.StatusOK, renderWebhookEndpoint(e))
}

func (s *Server) updateWebhookEndpoint(c echo.Context) error {
	id, err := pathID(c, "webhook_endpoint_id", ids.WebhookEndpoint)
	if err != nil {
		return err
	}
	a := cloud.ActorOf(principal(c))
	in, err := decode(c, false, parseWebhook, func(_ context.Context, in webhookInput) error {
		return s.svc.ValidateWebhookInput(a.Tenant.Mode, in.domain(), false)
	})
	if err != nil {
		return err
	}
	e, err := s.svc.UpdateWebhookEndpoint(c.Request().Context(), a, id, in.domain())
	if err != nil {
		return notFoundAs(err, "webhook endpoint", id)
	}
	return c.JSON(http.StatusOK, renderWebhookEndpoint(e))
}

func (s *Server) deleteWebhookEndpoint(c echo.Context) error {
	id, err := pathID(c, "webhook_endpoint_id", ids.WebhookEndpoint)
	if err != nil {
		return err
	}
	if err := s.svc.DeleteWebhookEndpoint(c.Request().Context(), cloud.ActorOf(principal(c)), id); err != nil {
		return notFoundAs(err, "webhook endpoint", id)
	}
	return c.NoContent(http.StatusNoContent)
}

// noBody accepts an empty body or an empty object, and nothing else.
func noBody(c echo.Context) error {
	_, err := decode(c, true, func(*body) struct{} { return struct{}{} }, func(context.Context, struct{}) error { return nil })
	return err
}

func (s *Server) setWebhookEndpointEnabled(enabled bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, err := pathID(c, "webhook_endpoint_id", ids.WebhookEndpoint)
		if err != nil {
			return err
		}
		if err := noBody(c); err != nil {
			return err
		}
		send := answer(c, answerOK(renderWebhookEndpoint))
		e, err := s.svc.SetWebhookEndpointEnabled(c.Request().Context(), cloud.ActorOf(principal(c)), id, enabled)
		if err != nil {
			return notFoundAs(err, "webhook endpoint", id)
		}
		return send(e)
	}
}

func (s *Server) rotateWebhookSecret(c echo.Context) error {
	id, err := pathID(c, "webhook_endpoint_id", ids.WebhookEndpoint)
	if err != nil {
		return err
	}
	if err := noBody(c); err != nil {
		return err
	}
	send := answer(c, answerOK(withSecret))
	e, err := s.svc.RotateWebhookSecret(c.Request().Context(), cloud.ActorOf(principal(c)), id)
	if err != nil {
		return notFoundAs(err, "webhook endpoint", id)
	}
	return send(e)
}

type webhookDeliveryJSON struct {
	Object           string  `json:"object"`
	EndpointID       string  `json:"endpoint_id"`
	EventID          string  `json:"event_id"`
	EventType        string  `json:"event_type"`
	Status           string  `json:"status"`
	Attempts         int     `json:"attempts"`
	NextAttemptAt    *string `json:"next_attempt_at"`
	LastAttemptAt    *string `json:"last_attempt_at"`
	LastResponseCode *int    `json:"last_response_status"`
	CreatedAt        string  `json:"created_at"`
	UpdatedAt        string  `json:"updated_at"`
}

func renderWebhookDelivery(d cloud.WebhookDelivery) webhookDeliveryJSON {
	out := webhookDeliveryJSON{Object: "webhook_delivery", EndpointID: d.EndpointID, EventID: d.EventID, EventType: d.EventType,
		Status: string(d.Status), Attempts: d.Attempts, LastAttemptAt: tsPtr(d.LastAttemptAt), CreatedAt: ts(d.CreatedAt),
		UpdatedAt: ts(d.UpdatedAt), LastResponseCode: statusCode(d.LastStatusCode)}
	if d.Status == cloud.DeliveryPending {
		out.NextAttemptAt = tsPtr(d.NextAttemptAt)
	}
	return out
}

func statusCode(c int) *int {
	if c == 0 {
		return nil
	}
	return &c
}

type webhookAttemptJSON struct {
	ID             string  `json:"id"`
	Object         string  `json:"object"`
	EndpointID     string  `json:"endpoint_id"`
	EventID        string  `json:"event_id"`
	AttemptedAt    string  `json:"attempted_at"`
	Status         string  `json:"status"`
	ResponseStatus *int    `json:"response_status"`
	DurationMS     float64 `json:"duration_ms"`
	Error          *string `json:"error"`
	NextAttemptAt  *string `json:"next_attempt_at"`
}

func renderWebhookAttempt(a cloud.WebhookAttempt) webhookAttemptJSON {
	status := "failed"
	if a.Succeeded {
		status = "succeeded"
	}
	return webhookAttemptJSON{ID: a.ID, Object: "webhook_attempt", EndpointID: a.EndpointID, EventID: a.EventID,
		AttemptedAt: ts(a.AttemptedAt), Status: status, ResponseStatus: statusCode(a.StatusCode),
		DurationMS: float64(a.Duration.Microseconds()) / 1000, Error: nullable(a.Error), NextAttemptAt: tsPtr(a.NextAttemptAt)}
}

func (s *Server) listWebhookDeliveries(c echo.Context) error {
	id, err := pathID(c, "webhook_endpoint_id", ids.WebhookEndpoint)
	if err != nil {
		return err
	}
	q, err := parseQuery(c, "limit", "cursor", "status", "event_id")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.DeliveryFilter{EventID: q.id("event_id", ids.Event)}
	if v, ok := q.get("status"); ok {
		switch st := cloud.DeliveryStatus(v); st {
		case cloud.DeliveryPending, cloud.DeliverySucceeded, cloud.DeliveryFailed:
			f.Status = st
		default:
			q.errs.add("query.status", "must be pending, succeeded or failed")
		}
	}
	scope := strings.Join([]string{"webhook-deliveries", t.OrgID, string(t.Mode), id, string(f.Status), f.EventID}, "\x00")
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.WebhookDeliveries(c.Request().Context(), cloud.ActorOf(principal(c)), id, f, p)
	if err != nil {
		return notFoundAs(err, "webhook endpoint", id)
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(d cloud.WebhookDelivery) cloud.Position {
		return cloud.Position{CreatedAt: d.CreatedAt, ID: d.EventID}
	}, renderWebhookDelivery))
}

func (s *Server) getWebhookDelivery(c echo.Context) error {
	id, eventID, err := deliveryPath(c)
	if err != nil {
		return err
	}
	d, err := s.svc.WebhookDelivery(c.Request().Context(), cloud.ActorOf(principal(c)), id, eventID)
	if err != nil {
		return notFoundAs(err, "webhook delivery", eventID)
	}
	return c.JSON(http.StatusOK, renderWebhookDelivery(d))
}

func (s *Server) resendWebhookDelivery(c echo.Context) error {
	id, eventID, err := deliveryPath(c)
	if err != nil {
		return err
	}
	if err := noBody(c); err != nil {
		return err
	}
	send := answer(c, func(d cloud.WebhookDelivery) (int, string, any) {
		return http.StatusAccepted, "", renderWebhookDelivery(d)
	})
	d, err := s.svc.ResendWebhook(c.Request().Context(), cloud.ActorOf(principal(c)), id, eventID)
	if err != nil {
		return notFoundAs(err, "webhook delivery", eventID)
	}
	return send(d)
}

// deliveryPath reads the endpoint and event IDs that name a delivery.
func deliveryPath(c echo.Context) (endpointID, eventID string, err error) {
	if endpointID, err = pathID(c, "webhook_endpoint_id", ids.WebhookEndpoint); err != nil {
		return "", "", err
	}
	eventID, err = pathID(c, "event_id", ids.Event)
	return endpointID, eventID, err
}

type resendJSON struct {
	Object  string `json:"object"`
	Since   string `json:"since"`
	Resent  int64  `json:"resent"`
	QueueAt string `json:"queued_at"`
}

func (s *Server) resendFailedWebhooks(c echo.Context) error {
	id, err := pathID(c, "webhook_endpoint_id", ids.WebhookEndpoint)
	if err != nil {
		return err
	}
	in, err := decode(c, false, func(b *body) cloud.Optional[*time.Time] {
		_, present := b.fields["since"]
		since := b.timestamp("since", false)
		if !present {
			b.errs.add(b.loc("since"), "is required: failed deliveries created at or after this time are sent again")
		}
		return since
	}, func(context.Context, cloud.Optional[*time.Time]) error { return nil })
	if err != nil {
		return err
	}
	send := answer(c, func(r cloud.WebhookResend) (int, string, any) {
		return http.StatusAccepted, "", resendJSON{Object: "webhook_resend", Since: ts(r.Since), Resent: r.Resent, QueueAt: ts(r.QueuedAt)}
	})
	r, err := s.svc.ResendFailedWebhooks(c.Request().Context(), cloud.ActorOf(principal(c)), id, *in.Value)
	if err != nil {
		return notFoundAs(err, "webhook endpoint", id)
	}
	return send(r)
}

func (s *Server) listWebhookAttempts(c echo.Context) error {
	id, err := pathID(c, "webhook_endpoint_id", ids.WebhookEndpoint)
	if err != nil {
		return err
	}
	q, err := parseQuery(c, "limit", "cursor", "event_id")
	if err != nil {
		return err
	}
	t := tenant(c)
	f := cloud.AttemptFilter{EventID: q.id("event_id", ids.Event)}
	scope := strings.Join([]string{"webhook-attempts", t.OrgID, string(t.Mode), id, f.EventID}, "\x00")
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	rows, more, err := s.svc.WebhookAttempts(c.Request().Context(), cloud.ActorOf(principal(c)), id, f, p)
	if err != nil {
		return notFoundAs(err, "webhook endpoint", id)
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(a cloud.WebhookAttempt) cloud.Position {
		return cloud.Position{CreatedAt: a.AttemptedAt, ID: a.ID}
	}, renderWebhookAttempt))
}

// EventBody is a webhook delivery's body: the event's envelope exactly as
// GET /events/{event_id} returns it.
func EventBody(e cloud.Event) ([]byte, error) { return json.Marshal(renderEvent(e)) }
