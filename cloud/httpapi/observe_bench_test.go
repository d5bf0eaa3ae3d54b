package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/cloud/telemetry"
)

// BenchmarkNotFound is a request the API answers without its database
// (no operation has the path), so that what every request pays around
// its operation shows: request ID, deadline, problem rendering, and, in
// the Observed variant, the access log line (JSON, discarded) and the
// metrics.
func BenchmarkNotFound(b *testing.B) { benchNotFound(b, false) }

// BenchmarkNotFound_Observed is BenchmarkNotFound with the access log and
// the metrics: their cost is the difference.
func BenchmarkNotFound_Observed(b *testing.B) { benchNotFound(b, true) }

func benchNotFound(b *testing.B, observed bool) {
	store, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "cloud.db"), kektest.Ring())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	cfg := httpapi.Config{Service: cloud.NewService(store, time.Now)}
	if observed {
		cfg.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
		cfg.Observer = telemetry.New(telemetry.Config{Store: store})
	}
	api, err := httpapi.New(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodGet, "/v1/no-such-operation", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		api.ServeHTTP(w, req)
		if w.Code != http.StatusNotFound {
			b.Fatalf("status %d", w.Code)
		}
	}
}
