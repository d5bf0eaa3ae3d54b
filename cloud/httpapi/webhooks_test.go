package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/cloud/webhook"
	"github.com/svc-vms/svc/shared/lockedbuf"
	"github.com/svc-vms/svc/shared/ratelog"
)

// receiver is a webhook receiver on this machine: it verifies every
// request with the official Standard Webhooks library, answers each
// message's first fail requests with 500 and the rest with 200, and
// counts what it got.
type receiver struct {
	t    *testing.T
	srv  *httptest.Server
	fail int // failed answers per message before it succeeds; -1 fails always

	mu       sync.Mutex
	secrets  []string          // verified against, any may match
	requests map[string]int    // per webhook-id
	ok       map[string]int    // 2xx answers per webhook-id
	bodies   map[string][]byte // the body of the answered request
	invalid  []string          // why requests failed verification
	status   int               // answer with this instead of 200 when set
}

func newReceiver(t *testing.T, fail int) *receiver {
	r := &receiver{t: t, fail: fail, requests: map[string]int{}, ok: map[string]int{}, bodies: map[string][]byte{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	verified := false
	var lastErr error
	for _, s := range r.secrets {
		wh, err := standardwebhooks.NewWebhook(s)
		require.NoError(r.t, err)
		if lastErr = wh.Verify(body, req.Header); lastErr == nil {
			verified = true
			break
		}
	}
	id := req.Header.Get("webhook-id")
	if !verified {
		r.invalid = append(r.invalid, id+": "+errString(lastErr))
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	r.requests[id]++
	if r.fail < 0 || r.requests[id] <= r.fail {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if r.status != 0 {
		w.WriteHeader(r.status)
		return
	}
	r.ok[id]++
	r.bodies[id] = body
	w.WriteHeader(http.StatusOK)
}

func errString(err error) string {
	if err == nil {
		return "no secret"
	}
	return err.Error()
}

func (r *receiver) trust(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = append(r.secrets, secret)
}

func (r *receiver) snapshot() (requests, ok map[string]int, invalid []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	requests, ok = map[string]int{}, map[string]int{}
	for k, v := range r.requests {
		requests[k] = v
	}
	for k, v := range r.ok {
		ok[k] = v
	}
	return requests, ok, append([]string(nil), r.invalid...)
}

// withHooks is a harness whose test mode may deliver to loopback, and its
// dispatcher.
func withHooks(t *testing.T, h *harness) *webhook.Dispatcher {
	h.svc.SetWebhookPolicy(cloud.WebhookPolicy{AllowLoopbackInTest: true})
	return &webhook.Dispatcher{Service: h.svc, Body: httpapi.EventBody}
}

// subscribe creates an endpoint for the receiver and tells it the secret.
func subscribe(t *testing.T, h *harness, r *receiver, types ...string) map[string]any {
	t.Helper()
	if len(types) == 0 {
		types = []string{"*"}
	}
	resp := h.post("/v1/webhook-endpoints", map[string]any{"url": r.srv.URL + "/hooks", "event_types": types, "description": "test receiver"})
	require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Raw)
	r.trust(resp.Body["secret"].(string))
	return resp.Body
}

// drain runs the dispatcher until nothing is due now, and returns how
// many attempts it made.
func drain(t *testing.T, d *webhook.Dispatcher) int {
	t.Helper()
	total := 0
	for {
		n, err := d.RunOnce(context.Background())
		require.NoError(t, err)
		if n == 0 {
			return total
		}
		total += n
	}
}

// A receiver that fails three times gets, after the retries, exactly one
// successful delivery of each event, signed so the Standard Webhooks
// library verifies it, whose body is the event as GET /events shows it;
// the attempts API shows every attempt.
func TestWebhooks_FailingThenSucceedingReceiverGetsEachEventOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		d := withHooks(t, h)
		var logs lockedbuf.Buffer
		d.Log = slog.New(slog.NewTextHandler(&logs, nil))
		r := newReceiver(t, 3)
		ep := subscribe(t, h, r)
		epID := ep["id"].(string)
		require.Regexp(t, `^whsec_[A-Za-z0-9+/]{43}=$`, ep["secret"])
		require.Equal(t, "enabled", ep["status"])

		v := createVisit(t, h, nil)
		require.Equal(t, http.StatusOK, action(h, v["id"].(string), "cancel", nil).Status)
		evs := events(t, h, "")
		require.Len(t, evs, 3, "visit.created, pass.sent, visit.cancelled")

		require.Equal(t, 3, drain(t, d), "every event's first attempt at once")
		for i := range 3 {
			require.Equal(t, 0, drain(t, d), "nothing due before the retry")
			h.clock.Advance(cloud.WebhookSchedule[i])
			require.Equal(t, 3, drain(t, d), "retry %d", i+1)
		}
		h.clock.Advance(24 * time.Hour)
		require.Equal(t, 0, drain(t, d), "nothing more once delivered")

		requests, ok, invalid := r.snapshot()
		require.Empty(t, invalid, "every request verifies with the Standard Webhooks library")
		// Each failed attempt is logged once, with its reason.
		require.Equal(t, 9, strings.Count(logs.String(), `msg="webhook attempt failed"`), logs.String())
		require.Equal(t, 9, strings.Count(logs.String(), "status=500"), logs.String())
		for _, e := range evs {
			id := e["id"].(string)
			require.Equal(t, 4, requests[id], "%s: three failures and a success", id)
			require.Equal(t, 1, ok[id], "%s: exactly one successful delivery", id)
			got := h.get("/v1/events/" + id)
			require.JSONEq(t, string(got.Raw), string(r.bodies[id]), "the body is the event as the API shows it")

			del := h.get("/v1/webhook-endpoints/" + epID + "/deliveries/" + id)
			require.Equal(t, http.StatusOK, del.Status, "%s", del.Raw)
			require.Equal(t, "succeeded", del.Body["status"])
			require.Equal(t, float64(4), del.Body["attempts"])
			require.Equal(t, float64(200), del.Body["last_response_status"])
			require.Nil(t, del.Body["next_attempt_at"])
		}

		first := evs[0]["id"].(string)
		atts := data(t, h.get("/v1/webhook-endpoints/"+epID+"/attempts?event_id="+first))
		require.Len(t, atts, 4)
		for i, a := range atts { // newest first
			if i == 0 {
				require.Equal(t, "succeeded", a["status"])
				require.Equal(t, float64(200), a["response_status"])
				require.Nil(t, a["next_attempt_at"])
				continue
			}
			require.Equal(t, "failed", a["status"])
			require.Equal(t, float64(500), a["response_status"])
			require.NotNil(t, a["next_attempt_at"], "a failed attempt says when the next one is")
			require.GreaterOrEqual(t, a["duration_ms"], float64(0))
		}
		require.Equal(t, "2026-11-21T09:00:05.000Z", atts[2]["attempted_at"], "the first retry 5 s after the first attempt")
		require.Equal(t, atts[2]["attempted_at"], atts[3]["next_attempt_at"])

		list := data(t, h.get("/v1/webhook-endpoints/"+epID+"/deliveries?status=succeeded"))
		require.Len(t, list, 3)
		require.Empty(t, data(t, h.get("/v1/webhook-endpoints/"+epID+"/deliveries?status=pending")))
	})
}

// The queue lives in the store: an API process that dies holding a
// claim, mid-retry, loses nothing; another process sends the delivery once
// the claim's lease is over, and the receiver gets it once.
func TestWebhooks_RestartMidRetryLosesNothing(t *testing.T) {
	// Each engine opened twice on one database: the process before the
	// restart and the one after, sharing nothing but the database.
	engines := map[string]func(t *testing.T) func() cloud.Store{
		"sqlite": func(t *testing.T) func() cloud.Store {
			path := filepath.Join(t.TempDir(), "cloud.db")
			return func() cloud.Store {
				s, err := sqlite.Open(context.Background(), path, kektest.Ring())
				require.NoError(t, err)
				return s
			}
		},
		"postgres": func(t *testing.T) func() cloud.Store {
			url := postgrestest.URL(t)
			schema := postgrestest.NewSchema(t, url)
			return func() cloud.Store {
				s, err := postgrestest.OpenIn(t, url, schema)
				require.NoError(t, err)
				return s
			}
		},
	}
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			open := engines[name](t)
			first := open()
			h := (&harness{t: t, clock: newClock()}).serve(t, first, options{plan: cloud.PlanPro})
			d := withHooks(t, h)
			r := newReceiver(t, 1)
			subscribe(t, h, r, "visit.created")
			v := createVisit(t, h, nil)
			require.Equal(t, 1, drain(t, d), "the first attempt fails")

			h.clock.Advance(cloud.WebhookSchedule[0])
			jobs, err := h.svc.ClaimWebhooks(context.Background(), 10)
			require.NoError(t, err)
			require.Len(t, jobs, 1, "the first process claims the retry")
			require.NoError(t, first.Close(), "and dies before sending it")

			second := open()
			t.Cleanup(func() { second.Close() })
			h2 := (&harness{t: t, clock: h.clock, seed: h.seed}).serve(t, second, options{plan: cloud.PlanPro})
			d2 := withHooks(t, h2)
			require.Equal(t, 0, drain(t, d2), "the claim holds while its lease runs")
			h.clock.Advance(cloud.WebhookLease)
			require.Equal(t, 1, drain(t, d2), "then the new process sends it")

			requests, ok, invalid := r.snapshot()
			require.Empty(t, invalid)
			evs := events(t, h2, "type=visit.created")
			require.Len(t, evs, 1)
			id := evs[0]["id"].(string)
			require.Equal(t, v["id"], evs[0]["data"].(map[string]any)["id"])
			require.Equal(t, 2, requests[id])
			require.Equal(t, 1, ok[id])
		})
	}
}

// Two API processes on PostgreSQL, each with its own connection pool and
// dispatcher, sending at once, never send the same delivery twice.
func TestWebhooks_TwoProcessesOnPostgresNeverDoubleSend(t *testing.T) {
	url := postgrestest.URL(t)
	schema := postgrestest.NewSchema(t, url)
	open := func(t *testing.T) cloud.Store {
		s, err := postgrestest.OpenIn(t, url, schema)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	a := (&harness{t: t, clock: newClock()}).serve(t, open(t), options{plan: cloud.PlanPro})
	b := (&harness{t: t, clock: a.clock, seed: a.seed}).serve(t, open(t), options{plan: cloud.PlanPro})
	da, db := withHooks(t, a), withHooks(t, b)
	da.Batch, db.Batch = 5, 5
	r := newReceiver(t, 0)
	subscribe(t, a, r, "visit.created")
	subscribe(t, a, r, "*") // a second endpoint: the same event once per endpoint

	const visits = 40
	for range visits {
		createVisit(t, a, nil)
	}
	var wg sync.WaitGroup
	counts := make([]int, 2)
	for i, d := range []*webhook.Dispatcher{da, db} {
		wg.Go(func() {
			for {
				n, err := d.RunOnce(context.Background())
				if err != nil || n == 0 {
					require.NoError(t, err)
					return
				}
				counts[i] += n
			}
		})
	}
	wg.Wait()
	require.Equal(t, 0, drain(t, da), "nothing left")

	requests, ok, invalid := r.snapshot()
	require.Empty(t, invalid)
	created := events(t, a, "type=visit.created")
	require.Len(t, created, visits)
	all := events(t, a, "")
	require.Equal(t, visits+len(all), counts[0]+counts[1], "each delivery sent once: visit.created to both endpoints, the rest to one")
	for _, e := range all {
		id := e["id"].(string)
		want := 1
		if e["type"] == "visit.created" {
			want = 2
		}
		require.Equal(t, want, requests[id], "%s %s", e["type"], id)
		require.Equal(t, want, ok[id])
	}
	t.Logf("process a sent %d, process b %d", counts[0], counts[1])
}

// An endpoint that fails for the whole retry schedule is disabled, and a
// webhook_endpoint.disabled event and an audit entry say so; its failed
// delivery is sent again on request once it is enabled, and new events
// are not queued for it while disabled.
func TestWebhooks_EndpointFailingForTheWholeScheduleIsDisabled(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		d := withHooks(t, h)
		bad := newReceiver(t, -1)
		ep := subscribe(t, h, bad, "visit.created")
		epID := ep["id"].(string)
		watcher := newReceiver(t, 0)
		subscribe(t, h, watcher, "webhook_endpoint.disabled")

		createVisit(t, h, nil)
		id := events(t, h, "type=visit.created")[0]["id"].(string)
		require.Equal(t, 1, drain(t, d))
		var total time.Duration
		for i, wait := range cloud.WebhookSchedule {
			h.clock.Advance(wait)
			total += wait
			want := 1
			if i == len(cloud.WebhookSchedule)-1 {
				want = 2 // the last retry, and the event that it disabled the endpoint to the watcher
			}
			require.Equal(t, want, drain(t, d), "retry %d", i+1)
		}
		require.Greater(t, total, 27*time.Hour, "the schedule runs about 27 hours")
		require.Less(t, total, 28*time.Hour)
		require.Equal(t, 0, drain(t, d))

		requests, ok, _ := bad.snapshot()
		require.Equal(t, len(cloud.WebhookSchedule)+1, requests[id], "the first attempt and every retry")
		require.Zero(t, ok[id])
		del := h.get("/v1/webhook-endpoints/" + epID + "/deliveries/" + id)
		require.Equal(t, "failed", del.Body["status"], "%s", del.Raw)
		require.Nil(t, del.Body["next_attempt_at"])

		got := h.get("/v1/webhook-endpoints/" + epID)
		require.Equal(t, "disabled", got.Body["status"], "%s", got.Raw)
		require.Equal(t, "failing", got.Body["disabled_reason"])
		disabled := events(t, h, "type=webhook_endpoint.disabled")
		require.Len(t, disabled, 1)
		require.Equal(t, epID, disabled[0]["data"].(map[string]any)["id"])
		require.NotContains(t, string(h.get("/v1/events?type=webhook_endpoint.disabled").Raw), "whsec_", "no secret in the event")
		_, wok, _ := watcher.snapshot()
		require.Equal(t, 1, wok[disabled[0]["id"].(string)], "an endpoint subscribed to it is told")
		audit := data(t, h.get("/v1/audit-events?action=webhook_endpoint.disabled"))
		require.Len(t, audit, 1)
		require.Equal(t, "system", audit[0]["actor_kind"])
		require.Equal(t, epID, audit[0]["object_id"])

		createVisit(t, h, nil)
		require.Len(t, data(t, h.get("/v1/webhook-endpoints/"+epID+"/deliveries")), 1, "nothing queued while disabled")
		requireProblem(t, h.post("/v1/webhook-endpoints/"+epID+"/deliveries/"+id+"/resend", nil), http.StatusConflict, "invalid_state")

		on := h.post("/v1/webhook-endpoints/"+epID+"/enable", nil)
		require.Equal(t, http.StatusOK, on.Status, "%s", on.Raw)
		require.Equal(t, "enabled", on.Body["status"])
		require.Nil(t, on.Body["disabled_reason"])
		bad.mu.Lock()
		bad.fail = 0
		bad.mu.Unlock()
		re := h.post("/v1/webhook-endpoints/"+epID+"/deliveries/"+id+"/resend", nil)
		require.Equal(t, http.StatusAccepted, re.Status, "%s", re.Raw)
		require.Equal(t, "pending", re.Body["status"])
		requireProblem(t, h.post("/v1/webhook-endpoints/"+epID+"/deliveries/"+id+"/resend", nil), http.StatusConflict, "invalid_state")
		require.Equal(t, 1, drain(t, d))
		_, ok, _ = bad.snapshot()
		require.Equal(t, 1, ok[id], "sent again on request")
		del = h.get("/v1/webhook-endpoints/" + epID + "/deliveries/" + id)
		require.Equal(t, "succeeded", del.Body["status"])
		require.Equal(t, float64(len(cloud.WebhookSchedule)+2), del.Body["attempts"])
	})
}

// A resend of every failed delivery since a time queues exactly those, one
// attempt each: a failure then does not start the schedule again.
func TestWebhooks_ResendFailedSince(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		d := withHooks(t, h)
		r := newReceiver(t, -1)
		ep := subscribe(t, h, r, "visit.created")
		epID := ep["id"].(string)
		createVisit(t, h, nil)
		h.clock.Advance(time.Hour)
		createVisit(t, h, nil)
		for range len(cloud.WebhookSchedule) + 1 {
			drain(t, d)
			h.clock.Advance(10 * time.Hour)
		}
		require.Len(t, data(t, h.get("/v1/webhook-endpoints/"+epID+"/deliveries?status=failed")), 2)
		require.Equal(t, http.StatusOK, h.post("/v1/webhook-endpoints/"+epID+"/enable", nil).Status)

		requireProblem(t, h.post("/v1/webhook-endpoints/"+epID+"/resend", map[string]any{}), http.StatusUnprocessableEntity,
			"validation_failed", "body.since")
		requireProblem(t, h.post("/v1/webhook-endpoints/"+epID+"/resend", map[string]any{"since": "yesterday"}), http.StatusUnprocessableEntity,
			"validation_failed", "body.since")
		res := h.post("/v1/webhook-endpoints/"+epID+"/resend", map[string]any{"since": "2026-11-21T09:30:00Z"})
		require.Equal(t, http.StatusAccepted, res.Status, "%s", res.Raw)
		require.Equal(t, float64(1), res.Body["resent"], "only the delivery created after since")
		require.Equal(t, 1, drain(t, d))
		h.clock.Advance(48 * time.Hour)
		require.Equal(t, 0, drain(t, d), "a resent delivery that fails again is not retried")
		require.Len(t, data(t, h.get("/v1/webhook-endpoints/"+epID+"/deliveries?status=failed")), 2)
	})
}

// After a rotation both the new and the old secret sign each delivery, for
// 24 hours; then only the new one. The rotation is audited.
func TestWebhooks_RotatedSecretSignsBesideTheOldFor24Hours(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		d := withHooks(t, h)
		ep := subscribe(t, h, newReceiver(t, 0), "visit.created")
		epID := ep["id"].(string)
		old := ep["secret"].(string)
		rot := h.post("/v1/webhook-endpoints/"+epID+"/rotate-secret", nil)
		require.Equal(t, http.StatusOK, rot.Status, "%s", rot.Raw)
		fresh := rot.Body["secret"].(string)
		require.NotEqual(t, old, fresh)
		require.Equal(t, "2026-11-22T09:00:00.000Z", rot.Body["previous_secret_valid_until"])
		got := h.get("/v1/webhook-endpoints/" + epID)
		require.NotContains(t, string(got.Raw), "whsec_", "the secret is shown only at creation and rotation")
		audit := data(t, h.get("/v1/audit-events?action=webhook_endpoint.secret_rotated"))
		require.Len(t, audit, 1)
		require.Equal(t, "key", audit[0]["actor_kind"])
		require.Equal(t, epID, audit[0]["object_id"])
		require.Equal(t, rot.Header.Get("Svc-Request-Id"), audit[0]["request_id"])

		// Two receivers behind the same URL's handler: one trusts only the
		// old secret, one only the new; both must verify each request.
		oldOnly, newOnly := newReceiver(t, 0), newReceiver(t, 0)
		oldOnly.trust(old)
		newOnly.trust(fresh)
		var sigs []string
		var mu sync.Mutex
		both := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			sigs = append(sigs, r.Header.Get("webhook-signature"))
			mu.Unlock()
			for _, rc := range []*receiver{oldOnly, newOnly} {
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodPost, "/", bytesReader(body))
				req.Header = r.Header.Clone()
				rc.serve(rec, req)
			}
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(both.Close)
		require.Equal(t, http.StatusOK, h.patch("/v1/webhook-endpoints/"+epID, map[string]any{"url": both.URL}).Status)

		createVisit(t, h, nil)
		require.Equal(t, 1, drain(t, d))
		_, okOld, badOld := oldOnly.snapshot()
		_, okNew, badNew := newOnly.snapshot()
		require.Empty(t, badOld)
		require.Empty(t, badNew)
		require.Len(t, okOld, 1, "the old secret still verifies within 24 hours")
		require.Len(t, okNew, 1)
		require.Regexp(t, `^v1,\S+ v1,\S+$`, sigs[0])

		h.clock.Advance(24 * time.Hour)
		createVisit(t, h, nil)
		require.Equal(t, 1, drain(t, d))
		_, okOld, badOld = oldOnly.snapshot()
		_, okNew, _ = newOnly.snapshot()
		require.Len(t, badOld, 1, "after 24 hours the old secret no longer signs")
		require.Len(t, okOld, 1)
		require.Len(t, okNew, 2)
		require.Regexp(t, `^v1,\S+$`, sigs[1])
	})
}

// Endpoints are created, listed, read, changed and deleted; every input
// error is named; deliveries follow the subscriptions.
func TestWebhooks_EndpointLifeAndInputErrors(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		d := withHooks(t, h)
		r := newReceiver(t, 0)
		ep := subscribe(t, h, r, "visit.cancelled", "visit.created", "visit.created")
		epID := ep["id"].(string)
		require.Regexp(t, `^we_[0-7][0-9a-hjkmnp-tv-z]{25}$`, epID)
		require.Equal(t, []any{"visit.cancelled", "visit.created"}, ep["event_types"], "sorted, without repeats")
		require.Equal(t, "test receiver", ep["description"])

		list := data(t, h.get("/v1/webhook-endpoints"))
		require.Len(t, list, 1)
		require.NotContains(t, list[0], "secret")
		upd := h.patch("/v1/webhook-endpoints/"+epID, map[string]any{"event_types": []string{"visit.cancelled"}, "description": nil})
		require.Equal(t, http.StatusOK, upd.Status, "%s", upd.Raw)
		require.Equal(t, []any{"visit.cancelled"}, upd.Body["event_types"])
		require.Nil(t, upd.Body["description"])

		v := createVisit(t, h, nil)
		require.Equal(t, http.StatusOK, action(h, v["id"].(string), "cancel", nil).Status)
		require.Equal(t, 1, drain(t, d), "only visit.cancelled is subscribed to")
		dels := data(t, h.get("/v1/webhook-endpoints/"+epID+"/deliveries"))
		require.Len(t, dels, 1)
		require.Equal(t, "visit.cancelled", dels[0]["event_type"])

		off := h.post("/v1/webhook-endpoints/"+epID+"/disable", nil)
		require.Equal(t, http.StatusOK, off.Status, "%s", off.Raw)
		require.Equal(t, "disabled", off.Body["status"])
		require.Equal(t, "manual", off.Body["disabled_reason"])
		require.Equal(t, http.StatusOK, h.post("/v1/webhook-endpoints/"+epID+"/disable", nil).Status, "disabling twice is no error")

		post := func(body any) response { return h.post("/v1/webhook-endpoints", body) }
		requireProblem(t, post(map[string]any{}), http.StatusUnprocessableEntity, "validation_failed", "body.url", "body.event_types")
		requireProblem(t, post(map[string]any{"url": "https://example.com/h", "event_types": []string{}}), http.StatusUnprocessableEntity,
			"validation_failed", "body.event_types")
		requireProblem(t, post(map[string]any{"url": "https://example.com/h", "event_types": []string{"visit.exploded", "*"}}),
			http.StatusUnprocessableEntity, "validation_failed", "body.event_types[0]", "body.event_types[1]")
		requireProblem(t, post(map[string]any{"url": "ftp://example.com/h", "event_types": []string{"*"}, "colour": "red"}),
			http.StatusUnprocessableEntity, "validation_failed", "body.url", "body.colour")
		requireProblem(t, post(map[string]any{"url": 7, "event_types": "*"}), http.StatusUnprocessableEntity,
			"validation_failed", "body.url", "body.event_types")

		requireProblem(t, h.get("/v1/webhook-endpoints/we_01h455vb4pex5vsknk084sn02q"), http.StatusNotFound, "not_found")
		requireProblem(t, h.get("/v1/webhook-endpoints/visit_01h455vb4pex5vsknk084sn02q"), http.StatusUnprocessableEntity, "validation_failed", "path.webhook_endpoint_id")
		requireProblem(t, h.get("/v1/webhook-endpoints/"+epID+"/deliveries?status=lost"), http.StatusUnprocessableEntity, "validation_failed", "query.status")

		del := h.do(req{method: http.MethodDelete, path: "/v1/webhook-endpoints/" + epID, key: h.seed.Keys.SecretTest})
		require.Equal(t, http.StatusNoContent, del.Status, "%s", del.Raw)
		requireProblem(t, h.get("/v1/webhook-endpoints/"+epID), http.StatusNotFound, "not_found")
		requireProblem(t, h.get("/v1/webhook-endpoints/"+epID+"/deliveries"), http.StatusNotFound, "not_found")
	})
}

// Live mode needs https and a public address, and Growth or above; test
// mode may use loopback only when the server allows it.
func TestWebhooks_OutboundURLRulesAndPlan(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withPlan(cloud.PlanGrowth))
		live := func(url string) response {
			return h.do(req{method: http.MethodPost, path: "/v1/webhook-endpoints", key: h.seed.Keys.SecretLive,
				body: map[string]any{"url": url, "event_types": []string{"*"}}})
		}
		for _, url := range []string{
			"http://hooks.example.com/in",    // not https
			"https://127.0.0.1/in",           // loopback
			"https://localhost:8443/in",      // loopback by name
			"https://[::1]/in",               // loopback
			"https://10.1.2.3/in",            // private
			"https://192.168.0.10/in",        // private
			"https://169.254.169.254/latest", // link-local: cloud metadata
			"https://[fe80::1]/in",           // link-local
			"https://100.64.0.1/in",          // shared address space
			"https://0.0.0.0/in",             // unspecified
			"https://user:pw@hooks.example.com/in",
			"https://intranet/in", // not a full domain name
			"/relative",
		} {
			requireProblem(t, live(url), http.StatusUnprocessableEntity, "validation_failed", "body.url")
		}
		ok := live("https://hooks.example.com/in?tenant=1")
		require.Equal(t, http.StatusCreated, ok.Status, "%s", ok.Raw)

		test := func(url string) response {
			return h.post("/v1/webhook-endpoints", map[string]any{"url": url, "event_types": []string{"*"}})
		}
		requireProblem(t, test("http://127.0.0.1:9000/in"), http.StatusUnprocessableEntity, "validation_failed", "body.url")
		h.svc.SetWebhookPolicy(cloud.WebhookPolicy{AllowLoopbackInTest: true})
		require.Equal(t, http.StatusCreated, test("http://127.0.0.1:9000/in").Status, "test mode may use loopback when allowed")
		require.Equal(t, http.StatusCreated, test("http://localhost:9000/in").Status)
		requireProblem(t, test("http://10.0.0.1/in"), http.StatusUnprocessableEntity, "validation_failed", "body.url")
		requireProblem(t, live("https://127.0.0.1/in"), http.StatusUnprocessableEntity, "validation_failed", "body.url")

		free := newHarness(t, open, withPlan(cloud.PlanFree))
		r := free.do(req{method: http.MethodPost, path: "/v1/webhook-endpoints", key: free.seed.Keys.SecretLive,
			body: map[string]any{"url": "https://hooks.example.com/in", "event_types": []string{"*"}}})
		requireProblem(t, r, http.StatusForbidden, "plan_required")
		requireProblem(t, free.do(req{method: http.MethodGet, path: "/v1/webhook-endpoints", key: free.seed.Keys.SecretLive}),
			http.StatusForbidden, "plan_required")
		require.Equal(t, http.StatusOK, free.get("/v1/webhook-endpoints").Status, "test mode on every plan")
	})
}

// A redirect is a failed attempt, not followed; so is no answer within the
// timeout; and a loopback address the policy no longer allows is refused
// when sending.
func TestWebhooks_RedirectTimeoutAndRefusedAddressFail(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		d := withHooks(t, h)
		d.Timeout = 300 * time.Millisecond
		target := newReceiver(t, 0)
		redirect := httptest.NewServer(http.RedirectHandler(target.srv.URL, http.StatusFound))
		t.Cleanup(redirect.Close)
		release := make(chan struct{})
		hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select { // answers only once the client has given up
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(func() { close(release); hang.Close() })

		mk := func(url string) string {
			r := h.post("/v1/webhook-endpoints", map[string]any{"url": url, "event_types": []string{"visit.created"}})
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			return r.Body["id"].(string)
		}
		redirID, hangID := mk(redirect.URL), mk(hang.URL)
		createVisit(t, h, nil)
		require.Equal(t, 2, drain(t, d))

		a := data(t, h.get("/v1/webhook-endpoints/"+redirID+"/attempts"))
		require.Len(t, a, 1)
		require.Equal(t, "failed", a[0]["status"])
		require.Equal(t, float64(http.StatusFound), a[0]["response_status"], "the redirect is the answer")
		_, ok, _ := target.snapshot()
		require.Empty(t, ok, "the redirect was not followed")

		a = data(t, h.get("/v1/webhook-endpoints/"+hangID+"/attempts"))
		require.Len(t, a, 1)
		require.Equal(t, "failed", a[0]["status"])
		require.Nil(t, a[0]["response_status"])
		require.Contains(t, a[0]["error"], "no response within")

		h.svc.SetWebhookPolicy(cloud.WebhookPolicy{})
		h.clock.Advance(cloud.WebhookSchedule[0])
		require.Equal(t, 2, drain(t, d))
		a = data(t, h.get("/v1/webhook-endpoints/"+redirID+"/attempts"))
		require.Len(t, a, 2)
		require.Contains(t, a[0]["error"], "loopback", "refused before connecting")
	})
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// An attempt in flight when the dispatcher is stopped (serve's shutdown)
// finishes and is recorded as it came out, a success, not cut and
// recorded as a failure that spends a retry step; deliveries it had not
// started are left pending, with no attempt spent.
func TestWebhooks_AttemptInFlightAtShutdownFinishes(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		d := withHooks(t, h)
		d.Workers = 1
		r := newReceiver(t, 0)
		started, release := make(chan string, 8), make(chan struct{})
		r.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			started <- req.Header.Get("webhook-id")
			<-release // a slow receiver: it answers once the dispatcher was told to stop
			r.serve(w, req)
		})
		epID := subscribe(t, h, r)["id"].(string)
		createVisit(t, h, nil)
		evs := events(t, h, "")
		require.Len(t, evs, 2, "visit.created and pass.sent")

		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		var inFlight string
		select {
		case inFlight = <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("no attempt started")
		}
		stop()
		close(release)
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}

		del := h.get("/v1/webhook-endpoints/" + epID + "/deliveries/" + inFlight)
		require.Equal(t, http.StatusOK, del.Status, "%s", del.Raw)
		require.Equal(t, "succeeded", del.Body["status"], "the attempt in flight at shutdown finished: %s", del.Raw)
		require.Equal(t, float64(1), del.Body["attempts"])
		for _, e := range evs {
			if id := e["id"].(string); id != inFlight {
				del := h.get("/v1/webhook-endpoints/" + epID + "/deliveries/" + id)
				require.Equal(t, "pending", del.Body["status"], "%s", del.Raw)
				require.Equal(t, float64(0), del.Body["attempts"], "not started, so no attempt spent: %s", del.Raw)
			}
		}
	})
}

// SetWebhookLease sets how long a claimed delivery is held: it is not
// claimed again before the lease ends, and is at its end.
func TestWebhooks_LeaseIsSettable(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		withHooks(t, h)
		h.svc.SetWebhookLease(cloud.MinWebhookLease)
		subscribe(t, h, newReceiver(t, 0), "visit.created")
		createVisit(t, h, nil)
		ctx := context.Background()
		jobs, err := h.svc.ClaimWebhooks(ctx, 10)
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		h.clock.Advance(cloud.MinWebhookLease - time.Second)
		jobs, err = h.svc.ClaimWebhooks(ctx, 10)
		require.NoError(t, err)
		require.Empty(t, jobs, "held until the lease ends")
		h.clock.Advance(time.Second)
		jobs, err = h.svc.ClaimWebhooks(ctx, 10)
		require.NoError(t, err)
		require.Len(t, jobs, 1, "claimable again when the %s lease ends, not after the default %s", cloud.MinWebhookLease, cloud.WebhookLease)
	})
}

// A receiver that is down fails every attempt, and each failure is a
// warning: a flood of them passes ratelog.DefaultBurst lines a minute,
// the rest are counted, and the first line of the next minute says how
// many were dropped (issue 19: a flood cannot fill a disk).
func TestWebhooks_FailedAttemptWarningsAreRateLimited(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		d := withHooks(t, h)
		var logs lockedbuf.Buffer
		d.Log = slog.New(slog.NewTextHandler(&logs, nil))
		var ahead atomic.Int64 // the dispatcher's clock runs this far ahead of the real one
		d.Clock = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
		r := newReceiver(t, -1)
		subscribe(t, h, r, "person.created")
		const n = 3 * ratelog.DefaultBurst
		for i := range n {
			resp := h.post("/v1/people", map[string]any{"name": fmt.Sprintf("Person %d", i)})
			require.Equal(t, http.StatusCreated, resp.Status, "%s", resp.Raw)
		}
		warnings := func() int { return strings.Count(logs.String(), `msg="webhook attempt failed"`) }

		require.Equal(t, n, drain(t, d), "every event's first attempt, each failed")
		require.Equal(t, ratelog.DefaultBurst, warnings(), "%s", logs.String())
		require.NotContains(t, logs.String(), "suppressed=")

		// A minute on, every retry fails too.
		h.clock.Advance(ratelog.DefaultEvery)
		ahead.Add(int64(ratelog.DefaultEvery))
		require.Equal(t, n, drain(t, d), "every event's second attempt")
		require.Equal(t, 2*ratelog.DefaultBurst, warnings(), "%s", logs.String())
		require.Equal(t, 1, strings.Count(logs.String(), fmt.Sprintf("suppressed=%d", n-ratelog.DefaultBurst)),
			"the first warning of the new minute counts the dropped ones: %s", logs.String())
		requests, _, _ := r.snapshot()
		require.Len(t, requests, n, "every event reached the receiver")
	})
}
