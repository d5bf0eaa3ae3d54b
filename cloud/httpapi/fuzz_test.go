package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/problem"
)

func FuzzCursor(f *testing.F) {
	cs := cursors{key: []byte("0123456789abcdef0123456789abcdef")}
	good := cs.seal(cloud.Position{CreatedAt: time.UnixMicro(1700000000000000).UTC(), ID: ids.New(ids.Team)}, "teams")
	f.Add(good, "teams")
	f.Add("", "teams")
	f.Add("AAAA", "people")
	f.Fuzz(func(t *testing.T, s, scope string) {
		pos, ok := cs.open(s, scope)
		if !ok {
			return
		}
		// Only what this key sealed opens, and it seals back to itself.
		if again := cs.seal(pos, scope); again != s {
			t.Fatalf("opened %q as %+v, which seals to %q", s, pos, again)
		}
	})
}

// fuzzAPI is a server over a fresh SQLite store with a seeded
// organisation, for fuzz targets that go through the whole stack; its
// limits are high enough never to be what a fuzz input hits.
func fuzzAPI(f *testing.F) (*Server, cloud.SeedResult) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(f.TempDir(), "cloud.db"), kektest.Ring())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	svc := cloud.NewService(store, time.Now)
	seed, err := svc.Seed(ctx, "Fuzz", cloud.PlanPro)
	if err != nil {
		f.Fatal(err)
	}
	api, err := New(ctx, Config{Service: svc, RateLimits: map[cloud.Plan]int{cloud.PlanPro: 1 << 30},
		PassLinkLimit: 1 << 30, PassAddressLimit: 1 << 30})
	if err != nil {
		f.Fatal(err)
	}
	return api, seed
}

// serveFuzz sends r and checks what every answer keeps: never a 5xx, a JSON
// body (a problem for every 4xx, with a code of its status), a request ID.
func serveFuzz(t *testing.T, api *Server, r *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	api.ServeHTTP(w, r)
	if w.Code >= 500 {
		t.Fatalf("%s %q: %d %s", r.Method, r.URL.String(), w.Code, w.Body)
	}
	if w.Header().Get(headerRequestID) == "" {
		t.Fatalf("%s %q: no request ID", r.Method, r.URL.String())
	}
	if w.Header().Get(echo.HeaderContentType) == "image/png" {
		return w
	}
	var out map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %q: response is not JSON: %s", r.Method, r.URL.String(), w.Body)
	}
	if w.Code >= 400 {
		code, _ := out["code"].(string)
		if problem.Code(code).Status() != w.Code {
			t.Fatalf("%s %q: %d with code %q", r.Method, r.URL.String(), w.Code, code)
		}
	}
	return w
}

// FuzzCreateTeamBody sends arbitrary bodies to POST /v1/teams through the
// whole stack: every answer is a 201 or a 4xx problem, never a 500.
func FuzzCreateTeamBody(f *testing.F) {
	api, seed := fuzzAPI(f)
	f.Add([]byte(`{"name":"A","member_ids":["` + seed.Test.People[0] + `"],"lead_id":"` + seed.Test.People[0] + `"}`))
	f.Add([]byte(`{"name":null,"site_id":{},"member_ids":[1,2],"visitors_can_choose":"x"}`))
	f.Add([]byte(`{"address":{"line1":[]}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"name":"\u0000"}`))
	f.Add([]byte(`{"name":"\ud83d\ude00"}`))
	f.Add([]byte("{\"name\":\"\xff\"}"))
	n := 0
	f.Fuzz(func(t *testing.T, body []byte) {
		n++
		for _, target := range []struct{ method, path string }{
			{http.MethodPost, "/v1/teams"},
			{http.MethodPatch, "/v1/teams/" + seed.Test.Teams[0]},
			{http.MethodPost, "/v1/sites"},
			{http.MethodPatch, "/v1/people/" + seed.Test.People[1]},
		} {
			req := httptest.NewRequest(target.method, target.path, bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+seed.Keys.SecretTest)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "00000000-0000-4000-8000-"+padded(n))
			w := serveFuzz(t, api, req)
			if w.Code < 300 && !validText(body) {
				t.Fatalf("%s %s accepted %q, which is not valid UTF-8 text", target.method, target.path, body)
			}
		}
	})
}

// FuzzValidText holds validText to what encoding/json makes of a body:
// a body it accepts decodes with no U+FFFD but those the body wrote, and a
// body it refuses is not UTF-8 or decodes with a U+FFFD the body did not
// write (a lone surrogate).
func FuzzValidText(f *testing.F) {
	for _, s := range []string{`{"a":"b"}`, `"\ud800"`, `"\ud83d\ude00"`, `"\udc00"`, `"\\ud800"`, `["\ud83d\u0041"]`,
		"\"\xff\"", `"\ufffd"`, "\"\xef\xbf\xbd\"", `{"\ud800":1}`, `"\uD83D\uDE00"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber() // numbers beyond float64 are valid JSON too
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("valid JSON %q does not decode: %v", raw, err)
		}
		decoded := countReplacement(v)
		written := bytes.Count(raw, []byte("\xef\xbf\xbd")) + escapedReplacements(raw)
		ok := validText(raw)
		switch {
		case ok && decoded != written:
			t.Fatalf("validText accepted %q, which decodes with %d U+FFFD where it wrote %d", raw, decoded, written)
		case !ok && utf8.Valid(raw) && decoded == written:
			t.Fatalf("validText refused %q, which is UTF-8 and decodes as written", raw)
		}
	})
}

// countReplacement counts U+FFFD in every string (keys too) of a decoded
// JSON value.
func countReplacement(v any) int {
	switch v := v.(type) {
	case string:
		return strings.Count(v, "\ufffd")
	case []any:
		n := 0
		for _, e := range v {
			n += countReplacement(e)
		}
		return n
	case map[string]any:
		n := 0
		for k, e := range v {
			n += strings.Count(k, "\ufffd") + countReplacement(e)
		}
		return n
	}
	return 0
}

// escapedReplacements counts \ufffd escapes (any case) in valid JSON,
// skipping escaped backslashes.
func escapedReplacements(raw []byte) int {
	n := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		i++
		if raw[i] == 'u' && strings.EqualFold(string(raw[i+1:i+5]), "fffd") {
			n++
		}
	}
	return n
}

// FuzzQuery sends arbitrary query strings to lists with every kind of
// filter (IDs, booleans, dates, timestamps, statuses, free text, cursors):
// every answer is a 200 page or a 4xx problem.
func FuzzQuery(f *testing.F) {
	api, seed := fuzzAPI(f)
	site, person, team := seed.Test.Sites[0].ID, seed.Test.People[0], seed.Test.Teams[0]
	for _, q := range []string{
		"", "limit=1", "limit=0", "limit=101", "limit=1e3", "cursor=AAAA", "cursor=%zz", "q=%25_", "site_id=" + site,
		"host_id=" + person, "waiting_with=reception", "waiting_with=" + team, "status=expected,checked_in",
		"expected_from=2026-01-01T00:00:00Z&expected_before=2025-01-01T00:00:00Z", "from=2026-11-01&to=2026-11-30",
		"person_id=" + person + "&person_id=" + person, "include_archived=TRUE", "visitors_can_choose=1",
		"site_id=site_01h2xcejqtf2nbrexx3vqjhp41", "type=meeting", "type=Bad", "active=false&email=A@B.C",
	} {
		f.Add(q)
	}
	paths := []string{"/v1/visits", "/v1/teams", "/v1/people", "/v1/bookings", "/v1/attendance-events",
		"/v1/attendance-summaries", "/v1/timesheets", "/v1/events", "/v1/audit-events", "/v1/messages"}
	f.Fuzz(func(t *testing.T, q string) {
		for _, p := range paths {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.URL.Path, req.URL.RawQuery, req.RequestURI = p, q, ""
			req.Header.Set("Authorization", "Bearer "+seed.Keys.SecretTest)
			w := serveFuzz(t, api, req)
			if w.Code != http.StatusOK && w.Code != http.StatusBadRequest && w.Code != http.StatusUnprocessableEntity {
				t.Fatalf("GET %s?%s: %d %s", p, q, w.Code, w.Body)
			}
		}
	})
}

// FuzzHeaders sends arbitrary Authorization and Idempotency-Key values:
// anything that is not "Bearer" and a key of ours is 401 before the key is
// looked at further, a POST whose Idempotency-Key is not a UUID is 422 at
// header.Idempotency-Key, and nothing is a 5xx.
func FuzzHeaders(f *testing.F) {
	api, seed := fuzzAPI(f)
	for _, c := range [][2]string{
		{"Bearer " + seed.Keys.SecretTest, "5f0c6b8e-3c1a-4f4e-9d55-2b8f7c1e0a42"},
		{"bearer   " + seed.Keys.SecretTest + "  ", "5F0C6B8E-3C1A-4F4E-9D55-2B8F7C1E0A42"},
		{"Bearer " + seed.Keys.PublishableTest, ""},
		{"Basic dXNlcjpwdw==", "x"},
		{"Bearer", "5f0c6b8e3c1a4f4e9d552b8f7c1e0a42"},
		{"Bearer svc_sk_test_" + strings.Repeat("A", 32), "{5f0c6b8e-3c1a-4f4e-9d55-2b8f7c1e0a42}"},
		{"Bearer " + seed.Keys.SecretTest + "\x00", "5f0c6b8e-3c1a-4f4e-9d55-2b8f7c1e0a4\u00e9"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, auth, key string) {
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			req := httptest.NewRequest(method, "/v1/teams", strings.NewReader(`{"name":"Fuzz"}`))
			req.Header.Set("Authorization", auth)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(headerIdempotencyKey, key)
			w := serveFuzz(t, api, req)
			token, ok := bearer(auth)
			ours := ok && (token == seed.Keys.SecretTest || token == seed.Keys.PublishableTest ||
				token == seed.Keys.SecretLive || token == seed.Keys.PublishableLive)
			switch {
			case !ours && w.Code != http.StatusUnauthorized:
				t.Fatalf("%s with Authorization %q: %d, want 401", method, auth, w.Code)
			case ours && method == http.MethodPost && !validUUID(key) && token == seed.Keys.SecretTest && w.Code != http.StatusUnprocessableEntity:
				t.Fatalf("POST with Idempotency-Key %q: %d, want 422", key, w.Code)
			case ours && method == http.MethodPost && validUUID(key) && w.Code == http.StatusUnprocessableEntity &&
				strings.Contains(w.Body.String(), "header."+headerIdempotencyKey):
				t.Fatalf("POST with Idempotency-Key %q refused: %s", key, w.Body)
			}
		}
	})
}

// FuzzPassLink opens arbitrary links: only links PassLink made open (one
// text form per link), and GET /v1/passes/{link} answers every one with a
// pass or a 4xx problem.
func FuzzPassLink(f *testing.F) {
	api, seed := fuzzAPI(f)
	tn := cloud.Tenant{OrgID: seed.Organisation.ID, Mode: cloud.ModeTest}
	good := strings.TrimPrefix(api.svc.PassLink(tn, ids.New(ids.Visit)), "/v1/passes/")
	f.Add(good)
	f.Add(good + "\n")
	f.Add(good[:10] + "\r\n" + good[10:])
	f.Add(good[:len(good)-1] + "B")
	f.Add("bm90.b3Vycw")
	f.Add(".")
	f.Add("a.b.c")
	f.Add(strings.Repeat("A", 300) + ".AA")
	f.Fuzz(func(t *testing.T, link string) {
		if gotT, visit, err := api.svc.OpenPassLink(link); err == nil {
			if again := api.svc.PassLink(gotT, visit); again != "/v1/passes/"+link {
				t.Fatalf("opened %q as %v %s, whose link is %q", link, gotT, visit, again)
			}
		}
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL.Path, req.URL.RawPath, req.RequestURI = "/v1/passes/"+link, "", ""
		serveFuzz(t, api, req)
	})
}

func padded(n int) string {
	const digits = "000000000000"
	s := []byte(digits)
	for i := len(s) - 1; i >= 0 && n > 0; i-- {
		s[i] = byte('0' + n%10)
		n /= 10
	}
	return string(s)
}
