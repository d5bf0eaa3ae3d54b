package kiosk

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// A back= a browser reads as another host (it drops tabs and newlines in
// a URL: "/\t/evil.example" is "//evil.example") is no open redirect.
func TestKiosk_LanguageSwitchBackIsNoOpenRedirect(t *testing.T) {
	h := newHarness(t, "en", "fr")
	for _, back := range []string{"/\t/evil.example", "/\r/evil.example", "/\n/evil.example", "/\t\\evil.example"} {
		req := httptest.NewRequest(http.MethodPost, "/lang", strings.NewReader(url.Values{"lang": {"fr"}, "back": {back}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(rec, req)
		if loc := rec.Header().Get("Location"); loc != "/" {
			t.Errorf("back %q: redirected to %q, want /", back, loc)
		}
	}
}
