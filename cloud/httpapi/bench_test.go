package httpapi_test

import (
	"context"
	"io"
	"log/slog"
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
	"github.com/svc-vms/svc/cloud/telemetry"
)

// benchServer is the full handler stack on a seeded SQLite store with a
// rate limit that does not bind, and 30 more teams with members so a page
// of 25 is full. Observed, it logs every request (JSON, discarded) and
// keeps its metrics, as svc-cloud serve does; otherwise its logger
// discards below every level.
func benchServer(b *testing.B, observed bool) (http.Handler, string) {
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
	cfg := httpapi.Config{Service: svc, RateLimits: map[cloud.Plan]int{cloud.PlanEnterprise: 1 << 30}}
	if observed {
		cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
		cfg.Observer = telemetry.New(telemetry.Config{Store: store})
	}
	api, err := httpapi.New(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return api, seed.Keys.SecretTest
}

func BenchmarkGetTeams(b *testing.B) { benchGetTeams(b, false) }

// BenchmarkGetTeams_Observed is BenchmarkGetTeams with the access log and
// the metrics: their cost is the difference.
func BenchmarkGetTeams_Observed(b *testing.B) { benchGetTeams(b, true) }

func benchGetTeams(b *testing.B, observed bool) {
	api, key := benchServer(b, observed)
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

func BenchmarkPostTeams(b *testing.B) { benchPostTeams(b, false) }

// BenchmarkPostTeams_Observed is BenchmarkPostTeams with the access log
// and the metrics.
func BenchmarkPostTeams_Observed(b *testing.B) { benchPostTeams(b, true) }

func benchPostTeams(b *testing.B, observed bool) {
	api, key := benchServer(b, observed)
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
