package kiosk

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestTemplates_NoHardCodedText: between tags and template actions a
// template holds no words; every text comes from a catalogue.
func TestTemplates_NoHardCodedText(t *testing.T) {
	actions := regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	tags := regexp.MustCompile(`(?s)<[^>]*>`)
	pages, _ := fs.Glob(templateFiles, "templates/*.html")
	for _, p := range pages {
		b, _ := fs.ReadFile(templateFiles, p)
		text := tags.ReplaceAllString(actions.ReplaceAllString(string(b), " "), " ")
		for _, word := range strings.Fields(text) {
			if strings.IndexFunc(word, unicode.IsLetter) >= 0 {
				t.Errorf("%s: hard-coded text %q", p, word)
			}
		}
		// Attributes people read (alt, aria-label, placeholder, title) come from catalogues too.
		attrs := regexp.MustCompile(`(?:alt|aria-label|placeholder|title)="([^"{]*)"`)
		for _, m := range attrs.FindAllStringSubmatch(string(b), -1) {
			if strings.IndexFunc(m[1], unicode.IsLetter) >= 0 {
				t.Errorf("%s: hard-coded attribute text %q", p, m[1])
			}
		}
	}
}

// TestCatalogues_HoldEveryKeyUsed: each key the templates and handlers ask
// for is in every catalogue (LoadCatalogues already checks the catalogues
// hold the same keys).
func TestCatalogues_HoldEveryKeyUsed(t *testing.T) {
	cats, err := LoadCatalogues()
	if err != nil {
		t.Fatal(err)
	}
	if len(cats) < 2 {
		t.Fatalf("%d catalogues; English and one more are needed", len(cats))
	}
	used := map[string]bool{}
	keyRe := regexp.MustCompile(`\.T "([a-z_.]+)"|T\("([a-z_.]+)"\)|"((?:pair|error|walkin|pin|checkin)\.[a-z_]+)"`)
	pages, _ := fs.Glob(templateFiles, "templates/*.html")
	var sources []string
	for _, p := range pages {
		b, _ := fs.ReadFile(templateFiles, p)
		sources = append(sources, string(b))
	}
	goFiles, _ := fs.Glob(os.DirFS("."), "*.go")
	for _, f := range goFiles {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, _ := os.ReadFile(f)
		sources = append(sources, string(b))
	}
	for _, src := range sources {
		for _, m := range keyRe.FindAllStringSubmatch(src, -1) {
			for _, k := range m[1:] {
				if k != "" && !strings.HasSuffix(k, ".") {
					used[k] = true
				}
			}
		}
	}
	// Keys built at run time: refusal reasons, states, print job states.
	for _, k := range []string{"reason.ended", "reason.wrong_gate", "reason.not_yet", "reason.expired", "reason.outside_hours",
		"reason.used", "reason.invalid_token", "reason.already_in", "state.check_in", "state.check_out", "state.take",
		"state.hand_over", "state.other", "print.queued", "print.printing", "print.printed", "print.failed"} {
		used[k] = true
	}
	for lang, c := range cats {
		for k := range used {
			if !c.Has(k) {
				t.Errorf("catalogue %s lacks %q", lang, k)
			}
		}
	}
}

func TestCatalogue_MissingKeyIsVisible(t *testing.T) {
	c := &Catalogue{Lang: "en", msgs: map[string]string{}}
	if got := c.T("no.such"); got != "[no.such]" {
		t.Errorf("missing key renders %q", got)
	}
}

func TestAdmin_AnswersLoopbackOnly(t *testing.T) {
	h := newHarness(t)
	admin := h.srv.AdminHandler()
	req := httptest.NewRequest(http.MethodGet, "/kiosk/devices", nil)
	req.RemoteAddr = "192.168.1.20:5555"
	rec := httptest.NewRecorder()
	admin.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden {
		t.Errorf("LAN request to admin: %d, want 403", rec.Code)
	}
	req = httptest.NewRequest(http.MethodPost, "/kiosk/pairing-codes", strings.NewReader(`{"name":"Lobby","mode":"visitor"}`))
	req.RemoteAddr = "127.0.0.1:5555"
	rec = httptest.NewRecorder()
	admin.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated || !regexp.MustCompile(`"code":"\d{6}"`).MatchString(rec.Body.String()) {
		t.Errorf("pairing code from loopback: %d %s", rec.Code, rec.Body)
	}
}

func TestAdmin_PairingPageShowsAWorkingCode(t *testing.T) {
	h := newHarness(t)
	req := httptest.NewRequest(http.MethodGet, "/kiosk/pair?mode=reception", nil)
	req.RemoteAddr = "[::1]:4000"
	rec := httptest.NewRecorder()
	h.srv.AdminHandler().ServeHTTP(rec, req)
	m := regexp.MustCompile(`class="code"[^>]*>(\d{3})-(\d{3})<`).FindStringSubmatch(rec.Body.String())
	if rec.Code != http.StatusOK || m == nil {
		t.Fatalf("pairing page: %d, no code in it", rec.Code)
	}
	if res := h.post(h.client, "/pair", url.Values{"code": {m[1] + m[2]}}); res.Header.Get("Location") != "/reception" {
		t.Errorf("the page's code did not pair a reception device: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
}
