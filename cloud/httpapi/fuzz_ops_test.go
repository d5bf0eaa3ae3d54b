package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/shared/ids"
)

// bodyOperation is an operation of the OpenAPI document that takes a
// request body.
type bodyOperation struct{ method, path string }

// bodyOperations lists the document's operations with a request body, in
// a fixed order, so a fuzz input's index names the same one every run.
func bodyOperations(tb testing.TB) []bodyOperation {
	tb.Helper()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		tb.Fatal(err)
	}
	var out []bodyOperation
	for path, item := range doc.Paths {
		for method, raw := range item {
			var op struct {
				RequestBody json.RawMessage `json:"requestBody"`
			}
			if json.Unmarshal(raw, &op) != nil || op.RequestBody == nil {
				continue
			}
			out = append(out, bodyOperation{strings.ToUpper(method), path})
		}
	}
	slices.SortFunc(out, func(a, b bodyOperation) int { return strings.Compare(a.method+a.path, b.method+b.path) })
	return out
}

// FuzzOperationBodies sends arbitrary bodies to every operation of the
// OpenAPI document that takes one, through the whole stack, with path
// parameters naming the seed's objects (or a visit made for it): every
// answer is JSON (or empty for 204), and never a 5xx.
func FuzzOperationBodies(f *testing.F) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "cloud.db"), kektest.Ring())
	if err != nil {
		f.Fatal(err)
	}
	defer store.Close()
	svc := cloud.NewService(store, time.Now)
	seed, err := svc.Seed(ctx, "Fuzz", cloud.PlanEnterprise)
	if err != nil {
		f.Fatal(err)
	}
	api, err := New(ctx, Config{Service: svc, RateLimits: map[cloud.Plan]int{cloud.PlanEnterprise: 1 << 30}})
	if err != nil {
		f.Fatal(err)
	}
	n := 0
	do := func(method, path string, body []byte) *httptest.ResponseRecorder {
		n++
		req := httptest.NewRequest(method, "/v1"+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+seed.Keys.SecretTest)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "00000000-0000-4000-8000-"+padded(n))
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		return w
	}
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	made := do(http.MethodPost, "/visits", []byte(`{"site_id":"`+seed.Test.Sites[0].ID+`","host_id":"`+seed.Test.People[0]+
		`","type":"meeting","expected_at":"`+soon+`","visitor":{"name":"Fuzz Visitor","email":"fuzz@example.org"}}`))
	var visit struct {
		ID string `json:"id"`
	}
	if made.Code != http.StatusCreated || json.Unmarshal(made.Body.Bytes(), &visit) != nil {
		f.Fatalf("make a visit: %d %s", made.Code, made.Body)
	}
	params := map[string]string{
		"{site_id}": seed.Test.Sites[0].ID, "{gate_id}": seed.Test.Sites[0].Gates[0], "{person_id}": seed.Test.People[1],
		"{team_id}": seed.Test.Teams[0], "{visit_id}": visit.ID, "{booking_type_id}": ids.New(ids.BookingType),
		"{booking_id}": ids.New(ids.Booking), "{timesheet_id}": ids.New(ids.Timesheet),
		"{webhook_endpoint_id}": ids.New(ids.WebhookEndpoint), "{event_id}": ids.New(ids.Event),
	}
	ops := bodyOperations(f)
	for _, body := range []string{`{}`, `[]`, `null`, `{"name":"A"}`, `{"name":null,"site_id":{},"member_ids":[1,2]}`,
		`{"expected_at":"2200-01-01T00:00:00Z"}`, `{"visitor":{"email":"a@b"}}`, `{"url":"http://[::1]/"}`, "{\"name\":\"\xff\"}",
		`{"a":` + strings.Repeat(`[`, 200) + strings.Repeat(`]`, 200) + `}`} {
		for i := range ops {
			f.Add(uint16(i), []byte(body))
		}
	}
	f.Fuzz(func(t *testing.T, which uint16, body []byte) {
		op := ops[int(which)%len(ops)]
		path := op.path
		for k, v := range params {
			path = strings.ReplaceAll(path, k, v)
		}
		w := do(op.method, path, body)
		if w.Code >= 500 {
			t.Fatalf("%s %s with %q: %d %s", op.method, path, body, w.Code, w.Body)
		}
		if w.Code == http.StatusNoContent {
			return
		}
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s %s with %q: %d, not a JSON object: %s", op.method, path, body, w.Code, w.Body)
		}
		if w.Code >= 400 && out["code"] == nil {
			t.Fatalf("%s %s with %q: %d without a problem code: %s", op.method, path, body, w.Code, w.Body)
		}
	})
}
