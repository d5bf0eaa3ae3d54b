package kiosk

import (
	"errors"
	"github.com/svc-vms/svc/shared/ids"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
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

// A visitor tablet learns every on-site visit's ID from the sign-out
// search (each result is a form posting visit_id). Submitting a walk-in
// with such an ID, and the visitor's name (someone who came in with them
// knows it), is a retried submit to the store; the tablet must still not
// be given that visit's done page and badge, which it did not sign in.
func TestKiosk_WalkInWithAnotherTabletsVisitIDShowsNothing(t *testing.T) {
	h := newHarness(t)
	theirs := h.newClient()
	h.pair(theirs, ModeVisitor)
	h.pair(h.client, ModeVisitor)

	details := body(t, h.get(theirs, "/walk-in/details?to=desk&type=meeting&name=Ada+Lovelace"))
	form := url.Values{"to": {"desk"}, "type": {"meeting"}, "visit_id": {hiddenValue(t, details, "visit_id")},
		"name": {"Ada Lovelace"}, "email": {"ada@example.com"}}
	if res := h.post(theirs, "/walk-in", form); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("their walk-in: %d", res.StatusCode)
	}

	search := body(t, h.get(h.client, "/sign-out?q=ada"))
	id := hiddenValue(t, search, "visit_id")
	if id != form.Get("visit_id") {
		t.Fatalf("the sign-out search lists %q", id)
	}
	res := h.post(h.client, "/walk-in", url.Values{"to": {"desk"}, "type": {"meeting"}, "visit_id": {id}, "name": {"Ada Lovelace"}})
	if loc := res.Header.Get("Location"); loc == "/visits/"+id+"/done" {
		t.Errorf("another tablet's visit ID, resubmitted, led to its done page")
	}
	for _, p := range []string{"/visits/" + id + "/done", "/visits/" + id + "/badge.png", "/visits/" + id + "/badge"} {
		if res := h.get(h.client, p); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s on the other tablet: %d, want 404", p, res.StatusCode)
		}
	}
}

// Signing out from the search's results, which show "Ada L.", answers with
// the same short name: tapping other people's results must not reveal
// their full names on the public tablet.
func TestKiosk_SignOutGoodbyeShowsTheShortNameOnly(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	v := h.addWaiting("Ada Lovelace", time.Minute)
	res := h.post(h.client, "/sign-out", url.Values{"visit_id": {v.ID}})
	b := body(t, res)
	if res.StatusCode != http.StatusOK || !strings.Contains(b, "Ada L.") {
		t.Fatalf("sign out: %d", res.StatusCode)
	}
	if strings.Contains(b, "Lovelace") {
		t.Errorf("the sign-out answer shows the visitor's full name")
	}
}

// A walk-in the store cannot save (a full disk) comes back as typed, with
// the reason in plain words: nothing the visitor typed is lost.
func TestKiosk_WalkInNotSavedKeepsWhatWasTyped(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	h.store.failWith = errors.New("record fact: no space left on device")
	res := h.post(h.client, "/walk-in", url.Values{"to": {"desk"}, "type": {"meeting"}, "visit_id": {ids.New(ids.Visit)},
		"name": {"Ada Lovelace"}, "phone": {"+447700900123"}, "email": {"ada@example.com"}})
	b := body(t, res)
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(b, "could not save it") {
		t.Fatalf("not saved: %d", res.StatusCode)
	}
	for _, typed := range []string{`value="&#43;447700900123"`, `value="ada@example.com"`, `value="Ada Lovelace"`} {
		if !strings.Contains(b, typed) {
			t.Errorf("the form lost %s", typed)
		}
	}
}
