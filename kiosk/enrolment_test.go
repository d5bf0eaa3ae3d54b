package kiosk

import (
	"html"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// enrolmentHarness serves EnrolmentHandler with a status the test sets.
type enrolmentHarness struct {
	ts  *httptest.Server
	now time.Time

	mu sync.Mutex
	en Enrolment
}

func newEnrolmentHarness(t *testing.T, en Enrolment) *enrolmentHarness {
	t.Helper()
	h := &enrolmentHarness{now: time.Date(2026, 11, 26, 9, 0, 30, 0, time.UTC), en: en}
	handler, err := EnrolmentHandler(EnrolmentConfig{Languages: []string{"en", "fr"}, Now: func() time.Time { return h.now },
		Logger: slog.New(slog.DiscardHandler), Status: func() Enrolment {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.en
		}})
	if err != nil {
		t.Fatal(err)
	}
	h.ts = httptest.NewServer(handler)
	t.Cleanup(h.ts.Close)
	return h
}

func (h *enrolmentHarness) set(en Enrolment) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.en = en
}

// page fetches path with c and returns the response and its text with
// the HTML entities read back.
func (h *enrolmentHarness) page(t *testing.T, c *http.Client, path string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(h.ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	return res, html.UnescapeString(body(t, res))
}

func catalogue(t *testing.T, lang string) *Catalogue {
	t.Helper()
	cats, err := LoadCatalogues()
	if err != nil {
		t.Fatal(err)
	}
	return cats[lang]
}

// TestEnrolmentPage_ShowsCode: while the appliance is not enrolled, any
// page of the kiosk says so with the code, its expiry and how many minutes
// are left, answers 503 with Retry-After, and asks again by itself
// (kiosk.js, or a meta refresh without script).
func TestEnrolmentPage_ShowsCode(t *testing.T) {
	en := Enrolment{Code: "7KQ2-M9XD", Cloud: "https://cloud.example.com", Skew: 2 * time.Second}
	h := newEnrolmentHarness(t, en)
	en.ExpiresAt = h.now.Add(14*time.Minute + 30*time.Second)
	h.set(en)
	cat := catalogue(t, "en")
	for _, path := range []string{"/", "/pair", "/reception", "/walk-in?x=1"} {
		res, text := h.page(t, http.DefaultClient, path)
		if res.StatusCode != http.StatusServiceUnavailable || res.Header.Get("Retry-After") != "5" {
			t.Errorf("GET %s: %d, Retry-After %q; want 503 and 5", path, res.StatusCode, res.Header.Get("Retry-After"))
		}
		if res.Header.Get("Cache-Control") != "no-store" || !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("GET %s: headers %v", path, res.Header)
		}
		for _, want := range []string{cat.T("enrol.title"), `<p class="code">7KQ2-M9XD</p>`,
			cat.T("enrol.expires", "09:15", 15), cat.T("enrol.cloud", "https://cloud.example.com"),
			`data-refresh="5"`, `<noscript><meta http-equiv="refresh" content="5"></noscript>`} {
			if !strings.Contains(text, want) {
				t.Errorf("GET %s lacks %q:\n%s", path, want, text)
			}
		}
		if strings.Contains(text, cat.T("enrol.skew", 2)) {
			t.Errorf("GET %s warns of a 2 s skew", path)
		}
	}
	res, _ := h.page(t, http.DefaultClient, "/static/kiosk.css")
	if res.StatusCode != http.StatusOK {
		t.Errorf("the page's stylesheet: %d", res.StatusCode)
	}
}

// TestEnrolmentPage_States: a skew over the tolerance is shown as a
// warning; an expired code is not shown; a claimed code says the
// configuration is on its way; a failure to reach the cloud is told.
func TestEnrolmentPage_States(t *testing.T) {
	h := newEnrolmentHarness(t, Enrolment{})
	cat := catalogue(t, "en")
	for _, c := range []struct {
		name    string
		en      Enrolment
		want    []string
		notWant []string
	}{
		{"skew", Enrolment{Code: "7KQ2-M9XD", ExpiresAt: h.now.Add(time.Minute), Skew: -95400 * time.Millisecond, SkewWarning: true},
			[]string{`role="alert">` + cat.T("enrol.skew", 95), "7KQ2-M9XD", cat.T("enrol.expires", "09:01", 1)}, nil},
		{"expired", Enrolment{Code: "7KQ2-M9XD", ExpiresAt: h.now},
			[]string{cat.T("enrol.asking")}, []string{"7KQ2-M9XD", cat.T("enrol.code")}},
		{"starting", Enrolment{Problem: "dial tcp 192.0.2.1:443: connection refused"},
			[]string{cat.T("enrol.asking"), cat.T("enrol.problem", "dial tcp 192.0.2.1:443: connection refused")}, []string{cat.T("enrol.code")}},
		{"claimed", Enrolment{Claimed: true},
			[]string{cat.T("enrol.claimed"), cat.T("enrol.next")}, []string{cat.T("enrol.asking"), cat.T("enrol.code")}},
	} {
		h.set(c.en)
		_, text := h.page(t, http.DefaultClient, "/")
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: lacks %q:\n%s", c.name, w, text)
			}
		}
		for _, w := range c.notWant {
			if strings.Contains(text, w) {
				t.Errorf("%s: shows %q:\n%s", c.name, w, text)
			}
		}
	}
}

// TestEnrolmentPage_Languages: the page speaks the kiosk's languages and
// switches as every kiosk page does.
func TestEnrolmentPage_Languages(t *testing.T) {
	h := newEnrolmentHarness(t, Enrolment{})
	h.set(Enrolment{Code: "7KQ2-M9XD", ExpiresAt: h.now.Add(10 * time.Minute)})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	res, err := c.PostForm(h.ts.URL+"/lang", url.Values{"lang": {"fr"}, "back": {"/pair"}})
	if err != nil {
		t.Fatal(err)
	}
	fr := catalogue(t, "fr")
	text := html.UnescapeString(body(t, res))
	if res.Request.URL.Path != "/pair" || !strings.Contains(text, `<html lang="fr">`) || !strings.Contains(text, fr.T("enrol.title")) ||
		!strings.Contains(text, fr.T("enrol.expires", "09:10", 10)) {
		t.Errorf("after choosing French, %s:\n%s", res.Request.URL, text)
	}
}

func TestEnrolmentHandler_NeedsStatus(t *testing.T) {
	if _, err := EnrolmentHandler(EnrolmentConfig{}); err == nil {
		t.Error("no error without a status")
	}
	if _, err := EnrolmentHandler(EnrolmentConfig{Status: func() Enrolment { return Enrolment{} }, Languages: []string{"de"}}); err == nil {
		t.Error("no error for a language without a catalogue")
	}
}
