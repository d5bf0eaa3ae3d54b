package kiosk

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-vms/svc/gate/qrdecode"
	"github.com/svc-vms/svc/shared/ids"
)

type harness struct {
	t      testing.TB
	srv    *Server
	store  *memStore
	devs   *Devices
	ts     *httptest.Server
	now    time.Time
	client *http.Client
}

func newHarness(t testing.TB, langs ...string) *harness {
	t.Helper()
	h := &harness{t: t, store: newMemStore(), now: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)}
	var err error
	if h.devs, err = OpenDevices(filepath.Join(t.TempDir(), "kiosk.json")); err != nil {
		t.Fatal(err)
	}
	h.srv, err = New(Config{Store: h.store, Devices: h.devs, Languages: langs, Now: func() time.Time { return h.now }, DecodeImage: qrdecode.DecodeBytes,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h.ts = httptest.NewServer(h.srv.Handler())
	t.Cleanup(h.ts.Close)
	h.client = h.newClient()
	return h
}

func (h *harness) newClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// pair pairs c in mode through the pairing page, as a person would.
func (h *harness) pair(c *http.Client, mode string) {
	h.t.Helper()
	code, err := h.devs.NewCode("Front desk", mode, "", h.now)
	if err != nil {
		h.t.Fatal(err)
	}
	res := h.post(c, "/pair", url.Values{"code": {code.Code}})
	if res.StatusCode != http.StatusSeeOther {
		h.t.Fatalf("pair: %d %s", res.StatusCode, body(h.t, res))
	}
}

func (h *harness) get(c *http.Client, path string) *http.Response {
	h.t.Helper()
	res, err := c.Get(h.ts.URL + path)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func (h *harness) post(c *http.Client, path string, form url.Values) *http.Response {
	h.t.Helper()
	res, err := c.PostForm(h.ts.URL+path, form)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

func body(t testing.TB, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestKiosk_UnpairedBrowserSeesOnlyPairing(t *testing.T) {
	h := newHarness(t)
	v := h.addWaiting("Ada Lovelace", time.Minute)
	for _, p := range []string{"/", "/walk-in", "/reception", "/people?q=ad", "/visits/" + v.ID + "/done", "/visits/" + v.ID + "/badge.png", "/sign-out?q=ada"} {
		res := h.get(h.client, p)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/pair" {
			t.Errorf("GET %s unpaired: %d to %q, want 303 to /pair", p, res.StatusCode, res.Header.Get("Location"))
		}
		if b := body(t, res); strings.Contains(b, "Ada") {
			t.Errorf("GET %s unpaired shows visitor data", p)
		}
	}
	res := h.post(h.client, "/sign-out", url.Values{"visit_id": {v.ID}})
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /sign-out unpaired: %d, want 401", res.StatusCode)
	}
	if got, _ := h.store.Visit(v.ID); got.Status != "checked_in" {
		t.Errorf("an unpaired POST checked the visit out")
	}
}

func TestKiosk_PairingCodeWorksOnceAndWrongCodesEndIt(t *testing.T) {
	h := newHarness(t)
	code, err := h.devs.NewCode("Lobby tablet", ModeVisitor, "", h.now)
	if err != nil {
		t.Fatal(err)
	}
	if res := h.post(h.client, "/pair", url.Values{"code": {code.Code}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("pair: %d", res.StatusCode)
	}
	if res := h.get(h.client, "/"); res.StatusCode != http.StatusOK {
		t.Fatalf("paired GET /: %d", res.StatusCode)
	}
	other := h.newClient()
	if res := h.post(other, "/pair", url.Values{"code": {code.Code}}); res.StatusCode != http.StatusBadRequest {
		t.Errorf("a used code paired a second browser: %d", res.StatusCode)
	}

	code2, _ := h.devs.NewCode("Lobby tablet 2", ModeVisitor, "", h.now)
	for i := 0; i < PairingTries; i++ {
		wrong := "000000"
		if wrong == code2.Code {
			wrong = "000001"
		}
		h.post(other, "/pair", url.Values{"code": {wrong}})
	}
	if res := h.post(other, "/pair", url.Values{"code": {code2.Code}}); res.StatusCode != http.StatusBadRequest {
		t.Errorf("after %d wrong codes the open code still paired: %d", PairingTries, res.StatusCode)
	}

	code3, _ := h.devs.NewCode("Late tablet", ModeVisitor, "", h.now)
	h.now = h.now.Add(PairingTTL)
	if res := h.post(other, "/pair", url.Values{"code": {code3.Code}}); res.StatusCode != http.StatusBadRequest {
		t.Errorf("an expired code paired: %d", res.StatusCode)
	}
}

func TestKiosk_RevokedDeviceIsUnpaired(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeReception)
	devs := h.devs.List()
	if len(devs) != 1 {
		t.Fatalf("%d devices", len(devs))
	}
	if _, err := h.devs.Revoke(devs[0].ID, h.now); err != nil {
		t.Fatal(err)
	}
	if res := h.get(h.client, "/reception"); res.Header.Get("Location") != "/pair" {
		t.Errorf("revoked device: GET /reception went to %q", res.Header.Get("Location"))
	}
	reopened, err := OpenDevices(h.devs.path)
	if err != nil {
		t.Fatal(err)
	}
	if len(reopened.List()) != 0 {
		t.Errorf("the revocation was not saved")
	}
}

func TestKiosk_CrossSitePOSTRefused(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeReception)
	v := h.addWaiting("Ada Lovelace", time.Minute)
	req, _ := http.NewRequest(http.MethodPost, h.ts.URL+"/reception/visits/"+v.ID+"/check-out", nil)
	req.Header.Set("Origin", "http://evil.example")
	res, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site POST: %d, want 403", res.StatusCode)
	}
	if got, _ := h.store.Visit(v.ID); got.Status != "checked_in" {
		t.Errorf("a cross-site POST checked a visitor out")
	}
}

func (h *harness) addPerson(name, title string) Person {
	p := Person{ID: ids.New(ids.Person), Name: name, JobTitle: title}
	h.store.people = append(h.store.people, p)
	return p
}

func (h *harness) addTeam(name string, choose bool) Team {
	tm := Team{ID: ids.New(ids.Team), Name: name, VisitorsCanChoose: choose}
	h.store.teams = append(h.store.teams, tm)
	return tm
}

// addWaiting puts a checked-in desk visit in the queue, waiting for ago.
func (h *harness) addWaiting(name string, ago time.Duration) Visit {
	at := h.now.Add(-ago)
	v := &Visit{ID: ids.New(ids.Visit), Status: "checked_in", Type: "meeting", Source: "walk_in", Audience: "desk",
		Visitor: Visitor{Name: name, Email: "ada@example.com"}, NeedsSomeone: true, WaitingSince: at, CheckedInAt: &at}
	h.store.visits[v.ID] = v
	return *v
}

func TestKiosk_PersonSearchNeedsTwoLettersAndShowsNoContact(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	h.addPerson("Grace Hopper", "Rear admiral")
	h.addPerson("Alan Turing", "")
	if b := body(t, h.get(h.client, "/people?q=g")); strings.TrimSpace(b) != "[]" {
		t.Errorf("one letter found people: %s", b)
	}
	b := body(t, h.get(h.client, "/people?q=hop"))
	if !strings.Contains(b, "Grace Hopper") || strings.Contains(b, "Turing") {
		t.Errorf("search for hop: %s", b)
	}
	page := body(t, h.get(h.client, "/walk-in"))
	if strings.Contains(page, "Grace") || strings.Contains(page, "Turing") {
		t.Errorf("the walk-in page lists staff before any search")
	}
}

func TestKiosk_WalkInForTeamJoinsQueue(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	team := h.addTeam("Facilities", true)
	h.addTeam("Board", false)

	who := body(t, h.get(h.client, "/walk-in"))
	if !strings.Contains(who, "Facilities") || strings.Contains(who, "Board") {
		t.Fatalf("teams offered: want only visitors_can_choose ones")
	}
	if res := h.get(h.client, "/walk-in/type?to=team:"+h.store.teams[1].ID); res.StatusCode != http.StatusSeeOther {
		t.Errorf("a team visitors may not choose was accepted: %d", res.StatusCode)
	}
	res := h.post(h.client, "/walk-in/name", url.Values{"to": {"team:" + team.ID}, "type": {"meeting"}, "name": {"Ada  Lovelace"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("name: %d %s", res.StatusCode, body(t, res))
	}
	details := body(t, h.get(h.client, res.Header.Get("Location")))
	visitID := hiddenValue(t, details, "visit_id")
	form := url.Values{"to": {"team:" + team.ID}, "type": {"meeting"}, "visit_id": {visitID}, "name": {"Ada Lovelace"},
		"phone": {"+44 7700 900123"}, "email": {"ada@example.com"}, "company": {"Analytical Engines"}}
	res = h.post(h.client, "/walk-in", form)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/visits/"+visitID+"/done" {
		t.Fatalf("submit: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	// A second submit of the same form (a double tap) makes no second visit.
	h.post(h.client, "/walk-in", form)
	if len(h.store.walkIns) != 1 {
		t.Errorf("%d walk-ins made, want 1", len(h.store.walkIns))
	}
	in := h.store.walkIns[0]
	if in.TeamID != team.ID || in.Visitor.Phone != "+447700900123" || in.Visitor.Company != "Analytical Engines" {
		t.Errorf("walk-in = %+v", in)
	}
	if w := h.store.Waiting(); len(w) != 1 || w[0].ID != visitID {
		t.Errorf("queue = %+v", w)
	}
	done := body(t, h.get(h.client, "/visits/"+visitID+"/done"))
	if !strings.Contains(done, "Facilities has been told") {
		t.Errorf("done page does not say the team was told")
	}
}

func hiddenValue(t testing.TB, page, name string) string {
	t.Helper()
	marker := `name="` + name + `" value="`
	i := strings.Index(page, marker)
	if i < 0 {
		t.Fatalf("no hidden %s in page", name)
	}
	rest := page[i+len(marker):]
	return rest[:strings.IndexByte(rest, '"')]
}

func TestKiosk_WalkInValidationMessagesFromTheStore(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	res := h.post(h.client, "/walk-in", url.Values{"to": {"desk"}, "type": {"meeting"}, "visit_id": {ids.New(ids.Visit)},
		"name": {"Ada"}, "phone": {"07700 900123"}})
	b := body(t, res)
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(b, "must be a phone number in E.164 format") {
		t.Errorf("bad phone: %d, message shown: %v", res.StatusCode, strings.Contains(b, "E.164"))
	}
	if !strings.Contains(b, `aria-invalid="true"`) {
		t.Errorf("the bad field is not marked invalid for screen readers")
	}
}

func TestKiosk_ReturningVisitorSeesOnlyMaskedContacts(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	known := Visitor{ID: ids.New(ids.Visitor), Name: "Ada Lovelace", Email: "ada@example.com", Phone: "+447700900123", Company: "Secret Co"}
	h.store.visitors = append(h.store.visitors, known)
	res := h.post(h.client, "/walk-in/name", url.Values{"to": {"desk"}, "type": {"meeting"}, "name": {"ada lovelace"}})
	b := body(t, res)
	if !strings.Contains(b, Mask(known.Email)) {
		t.Fatalf("masked email not offered")
	}
	for _, secret := range []string{known.Email, known.Phone, known.Company} {
		if strings.Contains(b, secret) {
			t.Errorf("the returning page shows %q", secret)
		}
	}
	// Choosing the record uses it without showing it.
	details := body(t, h.get(h.client, "/walk-in/details?to=desk&type=meeting&name=ada+lovelace&visitor_id="+known.ID))
	for _, secret := range []string{known.Email, known.Phone, known.Company} {
		if strings.Contains(details, secret) {
			t.Errorf("the details page shows %q", secret)
		}
	}
	// Another name with the record's ID does not reach the record.
	details = body(t, h.get(h.client, "/walk-in/details?to=desk&type=meeting&name=Mallory&visitor_id="+known.ID))
	if hiddenValue(t, details, "visitor_id") != "" {
		t.Errorf("a record was linked under another name")
	}
}

func TestKiosk_CheckInRefusalInPlainWords(t *testing.T) {
	for _, lang := range []string{"en", "fr"} {
		t.Run(lang, func(t *testing.T) {
			h := newHarness(t, lang)
			h.pair(h.client, ModeVisitor)
			h.store.checkIn = func(in CheckIn) (Visit, error) {
				if in.Token != "P1:abc" {
					t.Errorf("token %q", in.Token)
				}
				return Visit{}, &RefusedError{Reason: "not_yet"}
			}
			res := h.post(h.client, "/check-in", url.Values{"pass": {"P1:abc"}})
			b := body(t, res)
			want := h.srv.cats[lang].T("reason.not_yet")
			if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(b, template_escape(want)) {
				t.Errorf("refusal: %d, want %q on the page", res.StatusCode, want)
			}
		})
	}
}

func template_escape(s string) string {
	return strings.NewReplacer("'", "&#39;", "&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;").Replace(s)
}

func TestKiosk_CheckInByShortCodeNormalised(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	var got string
	h.store.checkIn = func(in CheckIn) (Visit, error) {
		got = in.Code
		return Visit{}, ErrNotFound
	}
	h.post(h.client, "/check-in", url.Values{"code": {"7k2m-9qxo"}})
	if got != "7K2M9QX0" {
		t.Errorf("code given to the store = %q, want 7K2M9QX0", got)
	}
}

func TestKiosk_SignOutSearchShowsShortNamesOnly(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	v := h.addWaiting("Ada Lovelace", time.Minute)
	b := body(t, h.get(h.client, "/sign-out?q=ada"))
	if !strings.Contains(b, "Ada L.") || strings.Contains(b, "Lovelace") || strings.Contains(b, "ada@example.com") {
		t.Errorf("sign-out search shows more than a short name")
	}
	res := h.post(h.client, "/sign-out", url.Values{"visit_id": {v.ID}})
	if res.StatusCode != http.StatusOK {
		t.Fatalf("sign out: %d", res.StatusCode)
	}
	if got, _ := h.store.Visit(v.ID); got.Status != "checked_out" {
		t.Errorf("status %s after sign-out", got.Status)
	}
}

func TestKiosk_ReceptionNeedsPINOnVisitorTablet(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	if res := h.get(h.client, "/reception"); res.Header.Get("Location") != "/reception/pin" {
		t.Fatalf("visitor tablet reached reception without a PIN")
	}
	if err := h.devs.SetPIN("4821"); err != nil {
		t.Fatal(err)
	}
	if res := h.post(h.client, "/reception/pin", url.Values{"pin": {"0000"}}); res.StatusCode != http.StatusForbidden {
		t.Errorf("wrong PIN: %d", res.StatusCode)
	}
	if res := h.post(h.client, "/reception/pin", url.Values{"pin": {"4821"}}); res.Header.Get("Location") != "/reception" {
		t.Fatalf("right PIN did not open reception")
	}
	if res := h.get(h.client, "/reception"); res.StatusCode != http.StatusOK {
		t.Errorf("reception after PIN: %d", res.StatusCode)
	}
	h.now = h.now.Add(receptionIdle)
	if res := h.get(h.client, "/reception"); res.Header.Get("Location") != "/reception/pin" {
		t.Errorf("reception stayed open after %s alone", receptionIdle)
	}
}

func TestKiosk_PINLocksAfterWrongTries(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	if err := h.devs.SetPIN("4821"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < PINTries; i++ {
		h.post(h.client, "/reception/pin", url.Values{"pin": {"1111"}})
	}
	if res := h.post(h.client, "/reception/pin", url.Values{"pin": {"4821"}}); res.StatusCode != http.StatusForbidden {
		t.Errorf("the right PIN opened a locked device")
	}
	h.now = h.now.Add(PINLock)
	if res := h.post(h.client, "/reception/pin", url.Values{"pin": {"4821"}}); res.StatusCode != http.StatusSeeOther {
		t.Errorf("the lock did not end: %d", res.StatusCode)
	}
}

func TestKiosk_QueueOldestFirstWithOverdueHighlighted(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeReception)
	h.store.site.WaitLimit = 10 * time.Minute
	h.addWaiting("Recent Arrival", 2*time.Minute)
	h.addWaiting("Long Waiter", 25*time.Minute)
	b := body(t, h.get(h.client, "/reception"))
	i, j := strings.Index(b, "Long Waiter"), strings.Index(b, "Recent Arrival")
	if i < 0 || j < 0 || i > j {
		t.Fatalf("queue order: Long Waiter at %d, Recent Arrival at %d", i, j)
	}
	row := b[strings.LastIndex(b[:i], "<tr"):i]
	if !strings.Contains(row, "overdue") {
		t.Errorf("the visitor waiting 25 min is not highlighted")
	}
	if !strings.Contains(b, "25 min") {
		t.Errorf("how long each has waited is not shown")
	}
}

func TestKiosk_HandOverRefusedForVisitWithHost(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeReception)
	p := h.addPerson("Grace Hopper", "")
	v := h.addWaiting("Ada Lovelace", time.Minute)
	if res := h.post(h.client, "/reception/visits/"+v.ID+"/take", url.Values{"person_id": {p.ID}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("take: %d %s", res.StatusCode, body(t, res))
	}
	res := h.post(h.client, "/reception/visits/"+v.ID+"/hand-over", url.Values{"to": {"reception"}})
	b := body(t, res)
	if res.StatusCode != http.StatusConflict || !strings.Contains(b, "cannot be handed over") {
		t.Errorf("hand-over of a taken visit: %d", res.StatusCode)
	}
}

func TestKiosk_OfflineIndicatorCountsPending(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	h.store.online, h.store.pending = false, 3
	if b := body(t, h.get(h.client, "/")); !strings.Contains(b, "Offline: 3 waiting to be sent") {
		t.Errorf("offline indicator missing")
	}
}

func TestKiosk_VisitorTabletShowsOnlyItsOwnRecentBadge(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	other := h.addWaiting("Someone Else", time.Minute)
	if res := h.get(h.client, "/visits/"+other.ID+"/done"); res.StatusCode != http.StatusNotFound {
		t.Errorf("a visitor tablet showed another visit: %d", res.StatusCode)
	}
}

func TestKiosk_LanguageSwitch(t *testing.T) {
	h := newHarness(t, "en", "fr")
	h.pair(h.client, ModeVisitor)
	if b := body(t, h.get(h.client, "/")); !strings.Contains(b, `lang="en"`) || !strings.Contains(b, "Welcome") {
		t.Fatalf("default language is not English")
	}
	res := h.post(h.client, "/lang", url.Values{"lang": {"fr"}, "back": {"/walk-in"}})
	if res.Header.Get("Location") != "/walk-in" {
		t.Errorf("back to %q", res.Header.Get("Location"))
	}
	if b := body(t, h.get(h.client, "/")); !strings.Contains(b, `lang="fr"`) || !strings.Contains(b, "Bienvenue") {
		t.Errorf("French not shown after switching")
	}
	if res := h.post(h.client, "/lang", url.Values{"lang": {"fr"}, "back": {"//evil.example"}}); res.Header.Get("Location") != "/" {
		t.Errorf("open redirect to %q", res.Header.Get("Location"))
	}
}

func TestKiosk_NewRefusesBadLanguages(t *testing.T) {
	devs, _ := OpenDevices(filepath.Join(t.TempDir(), "k.json"))
	for _, langs := range [][]string{{"xx"}, {"en", "en"}, {"en", "fr", "de"}} {
		if _, err := New(Config{Store: newMemStore(), Devices: devs, Languages: langs}); err == nil {
			t.Errorf("languages %v accepted", langs)
		}
	}
}

func TestDevices_DamagedFileIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kiosk.json")
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDevices(path); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("damaged file: %v", err)
	}
}

func TestDevices_PINRules(t *testing.T) {
	d, _ := OpenDevices(filepath.Join(t.TempDir(), "k.json"))
	for _, pin := range []string{"", "12", "12a4", "1234567890123"} {
		if err := d.SetPIN(pin); err == nil {
			t.Errorf("PIN %q accepted", pin)
		}
	}
	if err := d.CheckPIN("kiosk_x", "1234", time.Now()); !errors.Is(err, ErrNoPIN) {
		t.Errorf("no PIN set: %v", err)
	}
}

func TestMask(t *testing.T) {
	for in, want := range map[string]string{
		"ada@example.com": "a•••@example.com",
		"+447700900123":   "+44••••••••23",
		"":                "",
		"123":             "•••",
	} {
		if got := Mask(in); got != want {
			t.Errorf("Mask(%q) = %q, want %q", in, got, want)
		}
	}
}

// After a hand-over the queue says whom the visitor now waits with.
func TestKiosk_QueueShowsTheReceiverAfterAHandOver(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeReception)
	p := h.addPerson("Grace Hopper", "")
	tm := h.addTeam("Facilities", true)
	v := h.addWaiting("Ada Lovelace", time.Minute)
	h.store.visits[v.ID].Team = &Ref{ID: tm.ID, Name: tm.Name}
	forOf := func() string {
		b := body(t, h.get(h.client, "/reception"))
		i := strings.Index(b, "Ada Lovelace")
		row := b[i:]
		row = row[strings.Index(row, "<td>")+4:]
		return row[:strings.Index(row, "</td>")]
	}
	if got := forOf(); got != "Facilities" {
		t.Fatalf("before: for %q", got)
	}
	h.post(h.client, "/reception/visits/"+v.ID+"/hand-over", url.Values{"to": {"person:" + p.ID}})
	if got := forOf(); got != "Grace Hopper" {
		t.Errorf("handed over to a person: for %q", got)
	}
	h.post(h.client, "/reception/visits/"+v.ID+"/hand-over", url.Values{"to": {"reception"}})
	if got := forOf(); got != "Reception" {
		t.Errorf("handed over to reception: for %q", got)
	}
}
