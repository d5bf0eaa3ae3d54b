package httpapi_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/webhook"
	"github.com/svc-vms/svc/shared/ids"
)

// These tests drive every webhook operation through the harness, which
// holds each response to the OpenAPI document, and check the behaviour the
// document's Webhooks tag and operations describe.

const secretPattern = `^whsec_[A-Za-z0-9+/]{43}=$`

// The webhook endpoint operations answer as documented: create shows the
// secret once, with a Location; get, list, update, enable and disable
// never show it; rotate-secret shows the new one and keeps the old one 24
// hours; deliveries wait pending; delete removes the endpoint.
func TestWebhooks_EndpointOperationsAnswerAsDocumented(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		created := h.post("/v1/webhook-endpoints", map[string]any{"url": "https://example.com/hook", "event_types": []string{"*"}})
		require.Equal(t, http.StatusCreated, created.Status, "%s", created.Raw)
		id := created.Body["id"].(string)
		base := "/v1/webhook-endpoints/" + id
		require.True(t, ids.Valid(ids.WebhookEndpoint, id), id)
		require.Equal(t, base, created.Header.Get("Location"))
		require.Regexp(t, secretPattern, created.Body["secret"])
		require.Equal(t, "enabled", created.Body["status"])
		require.Nil(t, created.Body["description"])
		require.Nil(t, created.Body["disabled_reason"])
		require.Nil(t, created.Body["previous_secret_valid_until"])

		got := h.get(base)
		require.Equal(t, http.StatusOK, got.Status, "%s", got.Raw)
		require.NotContains(t, got.Body, "secret", "the secret is shown only by create and rotate-secret")
		require.Contains(t, idsOf(data(t, h.get("/v1/webhook-endpoints?limit=10"))), id)

		patched := h.patch(base, map[string]any{"description": "Front desk", "event_types": []string{"visit.created", "pass.sent", "visit.created"}})
		require.Equal(t, http.StatusOK, patched.Status, "%s", patched.Raw)
		require.Equal(t, []any{"pass.sent", "visit.created"}, patched.Body["event_types"], "sorted, repeats dropped")
		require.Equal(t, "Front desk", patched.Body["description"])
		require.NotContains(t, patched.Body, "secret")
		cleared := h.patch(base, map[string]any{"description": nil})
		require.Equal(t, http.StatusOK, cleared.Status, "%s", cleared.Raw)
		require.Nil(t, cleared.Body["description"])

		off := h.post(base+"/disable", nil)
		require.Equal(t, http.StatusOK, off.Status, "%s", off.Raw)
		require.Equal(t, "disabled", off.Body["status"])
		require.Equal(t, "manual", off.Body["disabled_reason"])
		require.Equal(t, http.StatusOK, h.post(base+"/disable", map[string]any{}).Status, "disabling twice is no error")
		on := h.post(base+"/enable", nil)
		require.Equal(t, http.StatusOK, on.Status, "%s", on.Raw)
		require.Equal(t, "enabled", on.Body["status"])
		require.Nil(t, on.Body["disabled_reason"])

		rotated := h.post(base+"/rotate-secret", nil)
		require.Equal(t, http.StatusOK, rotated.Status, "%s", rotated.Raw)
		require.Regexp(t, secretPattern, rotated.Body["secret"])
		require.NotEqual(t, created.Body["secret"], rotated.Body["secret"])
		require.Equal(t, h.clock.Now().Add(24*time.Hour).Format("2006-01-02T15:04:05.000Z"), rotated.Body["previous_secret_valid_until"])
		require.NotContains(t, h.get(base).Body, "secret")

		v := createVisit(t, h, nil) // visit.created and pass.sent, both subscribed to
		deliveries := data(t, h.get(base+"/deliveries?status=pending"))
		require.Len(t, deliveries, 2)
		for _, d := range deliveries {
			require.Equal(t, "webhook_delivery", d["object"])
			require.Equal(t, id, d["endpoint_id"])
			require.Equal(t, float64(0), d["attempts"])
			require.NotNil(t, d["next_attempt_at"], "pending: its next attempt is due")
			require.Nil(t, d["last_response_status"])
		}
		var visitCreated map[string]any
		for _, e := range events(t, h, "type=visit.created") {
			if e["data"].(map[string]any)["id"] == v["id"] {
				visitCreated = e
			}
		}
		require.NotNil(t, visitCreated)
		evt := visitCreated["id"].(string)
		one := h.get(base + "/deliveries/" + evt)
		require.Equal(t, http.StatusOK, one.Status, "%s", one.Raw)
		require.Equal(t, "visit.created", one.Body["event_type"])
		require.Len(t, data(t, h.get(base+"/deliveries?event_id="+evt)), 1)
		require.Empty(t, data(t, h.get(base+"/deliveries?status=failed")))
		require.Empty(t, data(t, h.get(base+"/attempts?event_id="+evt)), "no dispatcher runs here")
		requireProblem(t, h.post(base+"/deliveries/"+evt+"/resend", nil), http.StatusConflict, "invalid_state")

		// Errors the document lists.
		requireProblem(t, h.get("/v1/webhook-endpoints/we_123"), http.StatusUnprocessableEntity, "validation_failed", "path.webhook_endpoint_id")
		requireProblem(t, h.get("/v1/webhook-endpoints/"+ids.New(ids.WebhookEndpoint)), http.StatusNotFound, "not_found")
		requireProblem(t, h.get(base+"?expand=secret"), http.StatusUnprocessableEntity, "validation_failed", "query.expand")
		requireProblem(t, h.get(base+"/deliveries?status=lost&event_id=evt_1"), http.StatusUnprocessableEntity, "validation_failed", "query.status", "query.event_id")
		requireProblem(t, h.get(base+"/deliveries/evt_1"), http.StatusUnprocessableEntity, "validation_failed", "path.event_id")
		requireProblem(t, h.get(base+"/deliveries/"+ids.New(ids.Event)), http.StatusNotFound, "not_found")
		requireProblem(t, h.get("/v1/webhook-endpoints/"+ids.New(ids.WebhookEndpoint)+"/attempts"), http.StatusNotFound, "not_found")
		requireProblem(t, h.post("/v1/webhook-endpoints", map[string]any{}), http.StatusUnprocessableEntity, "validation_failed", "body.url", "body.event_types")
		requireProblem(t, h.post("/v1/webhook-endpoints", map[string]any{"url": "ftp://example.com/x", "description": "", "event_types": []string{"*", "visit.created"}}),
			http.StatusUnprocessableEntity, "validation_failed", "body.url", "body.description", "body.event_types[0]")
		for _, url := range []string{"http://10.0.0.1/hook", "https://127.0.0.1/hook", "https://localhost/hook", "https://169.254.169.254/", "https://[::1]/", "https://intranet/hook", "https://user:pw@example.com/"} {
			requireProblem(t, h.post("/v1/webhook-endpoints", map[string]any{"url": url, "event_types": []string{"visit.created"}}),
				http.StatusUnprocessableEntity, "validation_failed", "body.url")
		}
		requireProblem(t, h.patch(base, map[string]any{"event_types": []string{"visit.nope"}, "secret": "x"}), http.StatusUnprocessableEntity, "validation_failed",
			"body.event_types[0]", "body.secret")
		requireProblem(t, h.patch(base, map[string]any{"event_types": []string{}}), http.StatusUnprocessableEntity, "validation_failed", "body.event_types")
		requireProblem(t, h.do(req{method: http.MethodPost, path: base + "/resend", key: h.seed.Keys.SecretTest}), http.StatusBadRequest, "bad_request")
		requireProblem(t, h.post(base+"/resend", map[string]any{}), http.StatusUnprocessableEntity, "validation_failed", "body.since")
		// A malformed since is reported first as malformed (today the
		// handler then adds "is required" at the same location too).
		r := h.post(base+"/resend", map[string]any{"since": "yesterday"})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed")
		require.Equal(t, "body.since", r.Body["errors"].([]any)[0].(map[string]any)["location"], "%s", r.Raw)
		requireProblem(t, h.post(base+"/enable", map[string]any{"now": true}), http.StatusUnprocessableEntity, "validation_failed", "body.now")
		requireProblem(t, h.do(req{method: http.MethodGet, path: "/v1/webhook-endpoints", key: h.seed.Keys.PublishableTest}), http.StatusForbidden, "forbidden")
		_, eventsOnly, err := h.svc.CreateKey(context.Background(), h.testTenant(), cloud.KindSecret, []cloud.Scope{cloud.ScopeEventsRead})
		require.NoError(t, err)
		r = h.do(req{method: http.MethodGet, path: "/v1/webhook-endpoints", key: eventsOnly})
		requireProblem(t, r, http.StatusForbidden, "scope_missing")
		require.Contains(t, r.Body["detail"], "webhooks:write")

		del := h.do(req{method: http.MethodDelete, path: base, key: h.seed.Keys.SecretTest})
		require.Equal(t, http.StatusNoContent, del.Status, "%s", del.Raw)
		requireProblem(t, h.get(base), http.StatusNotFound, "not_found")
		requireProblem(t, h.get(base+"/deliveries"), http.StatusNotFound, "not_found")
		requireProblem(t, h.do(req{method: http.MethodDelete, path: base, key: h.seed.Keys.SecretTest}), http.StatusNotFound, "not_found")
	})
}

// In live mode webhook endpoints need Growth or above, and https.
func TestWebhooks_LiveModeNeedsGrowthAndHTTPS(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		free := newHarness(t, open, withPlan(cloud.PlanFree))
		r := free.do(req{method: http.MethodGet, path: "/v1/webhook-endpoints", key: free.seed.Keys.SecretLive})
		requireProblem(t, r, http.StatusForbidden, "plan_required")
		require.Equal(t, http.StatusOK, free.get("/v1/webhook-endpoints").Status, "test mode works on every plan")

		growth := newHarness(t, open, withPlan(cloud.PlanGrowth))
		live := func(url string) response {
			return growth.do(req{method: http.MethodPost, path: "/v1/webhook-endpoints", key: growth.seed.Keys.SecretLive,
				body: map[string]any{"url": url, "event_types": []string{"visit.checked_in"}}})
		}
		requireProblem(t, live("http://example.com/hook"), http.StatusUnprocessableEntity, "validation_failed", "body.url")
		ok := live("https://example.com/hook")
		require.Equal(t, http.StatusCreated, ok.Status, "%s", ok.Raw)
		test := growth.post("/v1/webhook-endpoints", map[string]any{"url": "http://example.com/hook", "event_types": []string{"visit.checked_in"}})
		require.Equal(t, http.StatusCreated, test.Status, "test mode accepts http: %s", test.Raw)
	})
}

// docReceiver is a webhook endpoint's server: it records every request, and
// fails the ones fail says to.
type docReceiver struct {
	mu       sync.Mutex
	got      []docReceived
	attempts map[string]int // by path and webhook-id
	fail     func(path string, attempt int) bool
}

type docReceived struct {
	path   string
	header http.Header
	body   []byte
}

func (rc *docReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, docReceived{path: r.URL.Path, header: r.Header.Clone(), body: body})
	key := r.URL.Path + " " + r.Header.Get("webhook-id")
	rc.attempts[key]++
	fail := rc.fail(r.URL.Path, rc.attempts[key])
	rc.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// take returns the requests docReceived since the last call.
func (rc *docReceiver) take() []docReceived {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := rc.got
	rc.got = nil
	return out
}

// requireSigned checks a delivery's headers as the Webhooks tag documents
// them, with an HMAC computed here: webhook-signature holds one v1
// signature per secret, in order.
func requireSigned(t *testing.T, r docReceived, secrets ...string) {
	t.Helper()
	id, stamp := r.header.Get("webhook-id"), r.header.Get("webhook-timestamp")
	require.Regexp(t, `^evt_[0-7][0-9a-hjkmnp-tv-z]{25}$`, id)
	_, err := strconv.ParseInt(stamp, 10, 64)
	require.NoError(t, err, "webhook-timestamp is whole seconds: %q", stamp)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	var want []string
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		require.NoError(t, err)
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id + "." + stamp + "." + string(r.body)))
		want = append(want, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	require.Equal(t, strings.Join(want, " "), r.header.Get("webhook-signature"))
}

// Deliveries are signed, retried on the documented schedule, resent on
// request; an endpoint failing for the whole schedule is disabled with a
// webhook_endpoint.disabled event. Every response on the way matches the
// document.
func TestWebhooks_DeliveriesRetriesAndResendsAsDocumented(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		h.svc.SetWebhookPolicy(cloud.WebhookPolicy{AllowLoopbackInTest: true}) // svc-cloud serve --webhooks-allow-loopback
		rc := &docReceiver{attempts: map[string]int{}, fail: func(path string, attempt int) bool {
			return path == "/down" || attempt == 1 // /ok fails each event's first attempt only
		}}
		srv := httptest.NewServer(rc)
		t.Cleanup(srv.Close)
		d := &webhook.Dispatcher{Service: h.svc, Body: httpapi.EventBody, Clock: h.clock.Now}
		run := func() {
			t.Helper()
			_, err := d.RunOnce(context.Background())
			require.NoError(t, err)
		}
		endpoint := func(path string, types ...string) (string, string) {
			r := h.post("/v1/webhook-endpoints", map[string]any{"url": srv.URL + path, "event_types": types})
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			return "/v1/webhook-endpoints/" + r.Body["id"].(string), r.Body["secret"].(string)
		}
		ok, okSecret := endpoint("/ok", "*")
		down, _ := endpoint("/down", "visit.created")
		start := h.clock.Now()
		createVisit(t, h, nil)

		// The first attempt: /ok answers 503 to both its deliveries, /down
		// to its one.
		run()
		first := rc.take()
		require.Len(t, first, 3)
		for _, r := range first {
			validateDelivery(t, r.header, r.body)
			if r.path == "/ok" {
				requireSigned(t, r, okSecret)
				require.Equal(t, strconv.FormatInt(start.Unix(), 10), r.header.Get("webhook-timestamp"))
				var e map[string]any
				require.NoError(t, json.Unmarshal(r.body, &e))
				got := h.get("/v1/events/" + r.header.Get("webhook-id"))
				require.Equal(t, got.Body, e, "the body is the event as GET /events/{event_id} returns it")
			}
		}
		pending := data(t, h.get(ok+"/deliveries?status=pending"))
		require.Len(t, pending, 2)
		for _, p := range pending {
			require.Equal(t, float64(1), p["attempts"])
			require.Equal(t, float64(503), p["last_response_status"])
			require.Equal(t, start.Add(5*time.Second).Format("2006-01-02T15:04:05.000Z"), p["next_attempt_at"], "retried 5 s later")
		}
		attempts := data(t, h.get(ok+"/attempts"))
		require.Len(t, attempts, 2)
		for _, a := range attempts {
			require.Equal(t, "failed", a["status"])
			require.Equal(t, float64(503), a["response_status"])
			require.Nil(t, a["error"], "a response came")
		}

		// 5 s later /ok takes both.
		h.clock.Advance(5 * time.Second)
		run()
		require.Len(t, rc.take(), 3)
		require.Len(t, data(t, h.get(ok+"/deliveries?status=succeeded")), 2)
		evt := data(t, h.get(down+"/deliveries"))[0]["event_id"].(string)
		done := h.get(ok + "/deliveries/" + evt)
		require.Equal(t, "succeeded", done.Body["status"])
		require.Nil(t, done.Body["next_attempt_at"])
		require.Equal(t, float64(204), done.Body["last_response_status"])

		// After a rotation both secrets sign, the new one first; a resend
		// sends the same webhook-id again.
		rotated := h.post(ok+"/rotate-secret", nil)
		require.Equal(t, http.StatusOK, rotated.Status, "%s", rotated.Raw)
		resent := h.post(ok+"/deliveries/"+evt+"/resend", nil)
		require.Equal(t, http.StatusAccepted, resent.Status, "%s", resent.Raw)
		require.Equal(t, "pending", resent.Body["status"])
		requireProblem(t, h.post(ok+"/deliveries/"+evt+"/resend", nil), http.StatusConflict, "invalid_state")
		run()
		again := rc.take()
		require.Len(t, again, 1)
		validateDelivery(t, again[0].header, again[0].body) // signed with two secrets
		require.Equal(t, evt, again[0].header.Get("webhook-id"))
		requireSigned(t, again[0], rotated.Body["secret"].(string), okSecret)

		// /down fails every attempt: 8 over about 27.5 hours, then the
		// delivery is failed and the endpoint disabled.
		for _, wait := range cloud.WebhookSchedule[1:] {
			require.Equal(t, "pending", h.get(down + "/deliveries/" + evt).Body["status"])
			h.clock.Advance(wait)
			run()
		}
		failed := h.get(down + "/deliveries/" + evt)
		require.Equal(t, "failed", failed.Body["status"])
		require.Equal(t, float64(8), failed.Body["attempts"])
		require.Nil(t, failed.Body["next_attempt_at"])
		tried := data(t, h.get(down+"/attempts?limit=100&event_id="+evt))
		require.Len(t, tried, 8)
		for i, a := range tried { // newest first
			if i == 0 {
				require.Nil(t, a["next_attempt_at"], "the last attempt")
				continue
			}
			at, err := time.Parse(time.RFC3339, a["attempted_at"].(string))
			require.NoError(t, err)
			next, err := time.Parse(time.RFC3339, a["next_attempt_at"].(string))
			require.NoError(t, err)
			require.Equal(t, cloud.WebhookSchedule[len(tried)-1-i], next.Sub(at))
		}
		off := h.get(down)
		require.Equal(t, "disabled", off.Body["status"])
		require.Equal(t, "failing", off.Body["disabled_reason"])
		require.Equal(t, start.Format("2006-01-02T15:04:05.000Z"), off.Body["failing_since"])

		disabled := events(t, h, "type=webhook_endpoint.disabled")
		require.Len(t, disabled, 1)
		require.Nil(t, disabled[0]["request_id"])
		schema := loadOpenAPI(t).doc.Components.Schemas["WebhookEndpoint"].Value
		require.NoError(t, schema.VisitJSON(disabled[0]["data"], openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()),
			"webhook_endpoint.disabled carries a WebhookEndpoint")
		require.NotContains(t, disabled[0]["data"], "secret")
		require.Equal(t, off.Body["id"], disabled[0]["data"].(map[string]any)["id"])
		rc.take()
		run() // /ok gets the event (its first attempt fails) ...
		h.clock.Advance(5 * time.Second)
		run() // ... and the retry succeeds
		sent := rc.take()
		require.Len(t, sent, 2)
		want := h.get("/v1/events/" + disabled[0]["id"].(string)).Raw
		for _, r := range sent {
			validateDelivery(t, r.header, r.body)
			require.Equal(t, disabled[0]["id"], r.header.Get("webhook-id"))
			require.JSONEq(t, string(want), string(r.body))
			requireSigned(t, r, rotated.Body["secret"].(string)) // the previous secret's 24 hours are over
		}

		// A disabled endpoint takes no resend; enabled, its failed
		// deliveries are resent once each, and not retried.
		requireProblem(t, h.post(down+"/resend", map[string]any{"since": start.Format(time.RFC3339)}), http.StatusConflict, "invalid_state")
		requireProblem(t, h.post(down+"/deliveries/"+evt+"/resend", nil), http.StatusConflict, "invalid_state")
		on := h.post(down+"/enable", nil)
		require.Equal(t, http.StatusOK, on.Status, "%s", on.Raw)
		require.Nil(t, on.Body["failing_since"])
		batch := h.post(down+"/resend", map[string]any{"since": start.Format(time.RFC3339)})
		require.Equal(t, http.StatusAccepted, batch.Status, "%s", batch.Raw)
		require.Equal(t, "webhook_resend", batch.Body["object"])
		require.Equal(t, float64(1), batch.Body["resent"])
		none := h.post(down+"/resend", map[string]any{"since": start.Format(time.RFC3339)})
		require.Equal(t, float64(0), none.Body["resent"], "the delivery is pending again, not failed")
		run()
		require.Len(t, rc.take(), 1)
		refailed := h.get(down + "/deliveries/" + evt)
		require.Equal(t, "failed", refailed.Body["status"], "a resent delivery that fails is not retried")
		require.Equal(t, float64(9), refailed.Body["attempts"])
		require.Equal(t, "enabled", h.get(down).Body["status"])
	})
}
