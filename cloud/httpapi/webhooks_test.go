package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/webhook"
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
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		base := open(t)
		h := (&harness{t: t, clock: newClock()}).serve(t, base, options{plan: cloud.PlanPro})
		d := withHooks(t, h)
		r := newReceiver(t, 1)
		subscribe(t, h, r, "visit.created")
		v := createVisit(t, h, nil)
		require.Equal(t, 1, drain(t, d), "the first attempt fails")

		h.clock.Advance(cloud.WebhookSchedule[0])
		jobs, err := h.svc.ClaimWebhooks(context.Background(), 10)
		require.NoError(t, err)
		require.Len(t, jobs, 1, "the first process claims the retry and dies before sending it")

		// A new process over the same store.
		h2 := (&harness{t: t, clock: h.clock, seed: h.seed}).serve(t, base, options{plan: cloud.PlanPro})
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
