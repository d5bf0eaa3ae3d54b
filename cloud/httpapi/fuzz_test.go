package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/shared/ids"
)

func FuzzCursor(f *testing.F) {
	cs := cursors{key: []byte("0123456789abcdef0123456789abcdef")}
	good := cs.seal(cloud.Position{CreatedAt: time.UnixMicro(1700000000000000).UTC(), ID: ids.New(ids.Team)}, "teams")
	f.Add(good, "teams")
	f.Add("", "teams")
	f.Add("AAAA", "people")
	f.Fuzz(func(t *testing.T, s, scope string) {
		pos, ok := cs.open(s, scope)
		if !ok {
			return
		}
		// Only what this key sealed opens, and it seals back to itself.
		if again := cs.seal(pos, scope); again != s {
			t.Fatalf("opened %q as %+v, which seals to %q", s, pos, again)
		}
	})
}

// FuzzCreateTeamBody sends arbitrary bodies to POST /v1/teams through the
// whole stack: every answer is a 201 or a 4xx problem, never a 500.
func FuzzCreateTeamBody(f *testing.F) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "cloud.db"), kektest.Ring())
	if err != nil {
		f.Fatal(err)
	}
	defer store.Close()
	svc := cloud.NewService(store, time.Now)
	seed, err := svc.Seed(ctx, "Fuzz", cloud.PlanPro)
	if err != nil {
		f.Fatal(err)
	}
	api, err := New(ctx, Config{Service: svc, RateLimits: map[cloud.Plan]int{cloud.PlanPro: 1 << 30}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(`{"name":"A","member_ids":["` + seed.Test.People[0] + `"],"lead_id":"` + seed.Test.People[0] + `"}`))
	f.Add([]byte(`{"name":null,"site_id":{},"member_ids":[1,2],"visitors_can_choose":"x"}`))
	f.Add([]byte(`{"address":{"line1":[]}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"name":"\u0000"}`))
	n := 0
	f.Fuzz(func(t *testing.T, body []byte) {
		n++
		for _, target := range []struct{ method, path string }{
			{http.MethodPost, "/v1/teams"},
			{http.MethodPatch, "/v1/teams/" + seed.Test.Teams[0]},
			{http.MethodPost, "/v1/sites"},
			{http.MethodPatch, "/v1/people/" + seed.Test.People[1]},
		} {
			req := httptest.NewRequest(target.method, target.path, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+seed.Keys.SecretTest)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "00000000-0000-4000-8000-"+padded(n))
			w := httptest.NewRecorder()
			api.ServeHTTP(w, req)
			if w.Code >= 500 {
				t.Fatalf("%s %s with %q: %d %s", target.method, target.path, body, w.Code, w.Body)
			}
			var out map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
				t.Fatalf("%s %s: response is not JSON: %s", target.method, target.path, w.Body)
			}
		}
	})
}

func padded(n int) string {
	const digits = "000000000000"
	s := []byte(digits)
	for i := len(s) - 1; i >= 0 && n > 0; i-- {
		s[i] = byte('0' + n%10)
		n /= 10
	}
	return string(s)
}
