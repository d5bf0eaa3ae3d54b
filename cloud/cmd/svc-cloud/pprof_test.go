package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWithPprof_ServesProfilesBesideAdmin checks the admin handler keeps
// its paths and gains /debug/pprof/ only when wrapped.
func TestWithPprof_ServesProfilesBesideAdmin(t *testing.T) {
	admin := http.NewServeMux()
	admin.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("m")) })
	get := func(h http.Handler, path string) int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code
	}
	require.Equal(t, http.StatusNotFound, get(admin, "/debug/pprof/"))
	h := withPprof(admin)
	require.Equal(t, http.StatusOK, get(h, "/debug/pprof/"))
	require.Equal(t, http.StatusOK, get(h, "/debug/pprof/cmdline"))
	require.Equal(t, http.StatusOK, get(h, "/metrics"))
}
