package main

import (
	"net/http"
	"net/http/pprof"
)

// withPprof serves Go's runtime profiles under /debug/pprof/ beside the
// admin listener's own paths (serve --pprof). Only the admin listener
// gets them: it is loopback unless the operator opens it, and a profile
// shows the code's paths and costs CPU while it runs.
func withPprof(admin http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/", admin)
	return mux
}
