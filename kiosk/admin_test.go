package kiosk

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A browser on the appliance itself (its local pairing page) is a loopback
// client too: a web page it visits must not drive kiosk administration.
// A cross-site POST of a JSON body as text/plain needs no CORS preflight,
// and a cross-site GET of /kiosk/pair makes a pairing code.
func TestAdmin_WebPagesOnTheAppliancesBrowserRefused(t *testing.T) {
	h := newHarness(t)
	admin := h.srv.AdminHandler()
	do := func(method, path, body string, hdr map[string]string) int {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:50000"
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		admin.ServeHTTP(rec, req)
		return rec.Code
	}
	if got := do(http.MethodPost, "/kiosk/pin", `{"pin":"1234"}`, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}); got != http.StatusForbidden {
		t.Errorf("cross-site POST /kiosk/pin: %d, want 403", got)
	}
	if h.devs.HasPIN() {
		t.Errorf("a web page set the reception PIN")
	}
	if got := do(http.MethodGet, "/kiosk/pair", "", map[string]string{"Sec-Fetch-Site": "cross-site"}); got != http.StatusForbidden {
		t.Errorf("cross-site GET /kiosk/pair: %d, want 403", got)
	}
	// The CLI (no Origin, no Sec-Fetch-Site) and the page opened on the
	// appliance, or its own links, still work.
	if got := do(http.MethodPost, "/kiosk/pin", `{"pin":"4821"}`, nil); got != http.StatusOK {
		t.Errorf("svc-edge kiosk pin: %d, want 200", got)
	}
	for _, site := range []string{"none", "same-origin"} {
		if got := do(http.MethodGet, "/kiosk/pair", "", map[string]string{"Sec-Fetch-Site": site}); got != http.StatusOK {
			t.Errorf("GET /kiosk/pair, Sec-Fetch-Site %s: %d, want 200", site, got)
		}
	}
}
