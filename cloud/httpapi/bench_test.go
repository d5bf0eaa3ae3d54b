package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/sqlite"
)

// benchServer is the full handler stack on a seeded SQLite store with a
// rate limit that does not bind, and 30 more teams with members so a page
// of 25 is full.
func benchServer(b *testing.B) (http.Handler, string) {
	b.Helper()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "cloud.db"), kektest.Ring())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	svc := cloud.NewService(store, time.Now)
	seed, err := svc.Seed(ctx, "Bench", cloud.PlanEnterprise)
	if err != nil {
		b.Fatal(err)
	}
	tenant := cloud.Tenant{OrgID: seed.Organisation.ID, Mode: cloud.ModeTest}
	for i := range 30 {
		people := seed.Test.People[i%20 : i%20+3]
		if _, err := svc.CreateTeam(ctx, tenant, cloud.TeamInput{Name: cloud.Some("Load team " + strconv.Itoa(i)), MemberIDs: cloud.Some(people)}); err != nil {
			b.Fatal(err)
		}
	}
	api, err := httpapi.New(ctx, httpapi.Config{Service: svc, RateLimits: map[cloud.Plan]int{cloud.PlanEnterprise: 1 << 30}})
	if err != nil {
		b.Fatal(err)
	}
	return api, seed.Keys.SecretTest
}

func BenchmarkGetTeams(b *testing.B) {
	api, key := benchServer(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(http.MethodGet, "/v1/teams?limit=25", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			w := httptest.NewRecorder()
			api.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}

func BenchmarkPostTeams(b *testing.B) {
	api, key := benchServer(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(http.MethodPost, "/v1/teams", strings.NewReader(`{"name":"Bench team","visitors_can_choose":true}`))
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", uuid())
			w := httptest.NewRecorder()
			api.ServeHTTP(w, req)
			if w.Code != http.StatusCreated {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}
