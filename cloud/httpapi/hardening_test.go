package httpapi_test

// Tests of the hardening in issue 15: items 10 and 14 to 17 (item 13, the
// connection limits, is in listen_test.go with a real listener).

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
)

// A cursor has one text form: the decoder would skip a line break and
// ignore the unused bits of the last character, so both would open the
// same page; they are 422 at query.cursor.
func TestCursor_OnlyTheTextSealedOpens(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		// Sites' IDs are 31 characters, so a cursor is 55 bytes and its last
		// character has 4 unused bits.
		first := h.get("/v1/sites?limit=1")
		require.Equal(t, http.StatusOK, first.Status, "%s", first.Raw)
		cursor := first.Body["next_cursor"].(string)
		require.Equal(t, http.StatusOK, h.get("/v1/sites?limit=1&cursor="+cursor).Status, "the cursor as issued opens")

		const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		require.NoError(t, err)
		require.Equal(t, 1, len(raw)%3, "the cursor's last character has unused bits")
		flipped := cursor[:len(cursor)-1] + string(alphabet[strings.IndexByte(alphabet, cursor[len(cursor)-1])^1])
		same, err := base64.RawURLEncoding.DecodeString(flipped)
		require.NoError(t, err)
		require.Equal(t, raw, same, "the lax decoder reads the flipped text as the same bytes")

		for _, bad := range []string{
			cursor[:10] + "\n" + cursor[10:],
			cursor[:10] + "\r\n" + cursor[10:],
			cursor + "\n",
			flipped,
			cursor + "==",
		} {
			r := h.get("/v1/sites?limit=1&cursor=" + url.QueryEscape(bad))
			requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "query.cursor")
		}
	})
}

// Every ID filter of every list names an object of the caller's tenant:
// another organisation's ID (or the other mode's) is 422 at the filter, as
// docs/decisions.md ("Identifiers") has it, not an empty page; the caller's
// own ID is answered.
func TestFilters_AnotherTenantsIDIs422(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		other, err := h.svc.Seed(context.Background(), "Other Org", cloud.PlanPro)
		require.NoError(t, err)
		as := func(key, method, path string, body any) response {
			return h.do(req{method: method, path: path, key: key, body: body})
		}
		// The same objects in both organisations.
		type tenantIDs struct{ site, person, team, visit, visitor, bookingType, period, event, endpoint string }
		objects := func(key string, seed cloud.SeedMode) tenantIDs {
			v := as(key, http.MethodPost, "/v1/visits", map[string]any{
				"site_id": seed.Sites[0].ID, "host_id": seed.People[0], "type": "meeting", "expected_at": "2026-11-22T10:00:00Z",
				"visitor": map[string]any{"name": "Vera Visitor", "email": "vera@example.org"}})
			require.Equal(t, http.StatusCreated, v.Status, "%s", v.Raw)
			bt := as(key, http.MethodPost, "/v1/booking-types", map[string]any{
				"name": "Hours", "site_id": seed.Sites[0].ID, "visit_type": "meeting", "slot_minutes": 30,
				"opening_hours": []map[string]any{{"days": []string{"mon"}, "from": "09:00", "until": "12:00"}}})
			require.Equal(t, http.StatusCreated, bt.Status, "%s", bt.Raw)
			st := as(key, http.MethodPatch, "/v1/attendance-settings", map[string]any{"timezone": "Europe/London",
				"periods": map[string]any{"kind": "weekly", "weekday": "monday", "payroll_days": 5}})
			require.Equal(t, http.StatusOK, st.Status, "%s", st.Raw)
			periods := data(t, as(key, http.MethodGet, "/v1/timesheet-periods?limit=1", nil))
			events := data(t, as(key, http.MethodGet, "/v1/events?limit=1", nil))
			ep := as(key, http.MethodPost, "/v1/webhook-endpoints", map[string]any{"url": "https://hooks.example.com/in", "event_types": []string{"*"}})
			require.Equal(t, http.StatusCreated, ep.Status, "%s", ep.Raw)
			return tenantIDs{site: seed.Sites[0].ID, person: seed.People[0], team: seed.Teams[0], visit: v.Body["id"].(string),
				visitor: v.Body["visitor"].(map[string]any)["id"].(string), bookingType: bt.Body["id"].(string),
				period: periods[0]["id"].(string), event: events[0]["id"].(string), endpoint: ep.Body["id"].(string)}
		}
		mine := objects(h.seed.Keys.SecretTest, h.seed.Test)
		theirs := objects(other.Keys.SecretTest, other.Test)
		live := h.seed.Live

		filters := func(o tenantIDs, ep string) map[string]string { // path?query → the filter's location
			return map[string]string{
				"/v1/gates?site_id=" + o.site:                                                  "query.site_id",
				"/v1/people?site_id=" + o.site:                                                 "query.site_id",
				"/v1/teams?site_id=" + o.site:                                                  "query.site_id",
				"/v1/visits?site_id=" + o.site:                                                 "query.site_id",
				"/v1/visits?host_id=" + o.person:                                               "query.host_id",
				"/v1/visits?visitor_id=" + o.visitor:                                           "query.visitor_id",
				"/v1/visits?waiting_with=" + o.person:                                          "query.waiting_with",
				"/v1/visits?waiting_with=" + o.team:                                            "query.waiting_with",
				"/v1/messages?visit_id=" + o.visit:                                             "query.visit_id",
				"/v1/booking-types?site_id=" + o.site:                                          "query.site_id",
				"/v1/bookings?booking_type_id=" + o.bookingType:                                "query.booking_type_id",
				"/v1/bookings?site_id=" + o.site:                                               "query.site_id",
				"/v1/bookings?visitor_id=" + o.visitor:                                         "query.visitor_id",
				"/v1/attendance-events?person_id=" + o.person:                                  "query.person_id",
				"/v1/attendance-events?site_id=" + o.site:                                      "query.site_id",
				"/v1/attendance-summaries?from=2026-11-20&to=2026-11-21&person_id=" + o.person: "query.person_id",
				"/v1/attendance-summaries?from=2026-11-20&to=2026-11-21&site_id=" + o.site:     "query.site_id",
				"/v1/timesheets?person_id=" + o.person:                                         "query.person_id",
				"/v1/timesheets?period_id=" + o.period:                                         "query.period_id",
				"/v1/webhook-endpoints/" + ep + "/deliveries?event_id=" + o.event:              "query.event_id",
				"/v1/webhook-endpoints/" + ep + "/attempts?event_id=" + o.event:                "query.event_id",
			}
		}
		for path := range filters(mine, mine.endpoint) {
			r := h.get(path)
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", path, r.Raw)
		}
		for path, loc := range filters(theirs, mine.endpoint) {
			requireProblem(t, h.get(path), http.StatusUnprocessableEntity, "validation_failed", loc)
		}
		// The other mode's IDs are another tenant's too.
		for path, loc := range map[string]string{
			"/v1/visits?host_id=" + live.People[0]:              "query.host_id",
			"/v1/attendance-events?person_id=" + live.People[0]: "query.person_id",
			"/v1/visits?waiting_with=" + live.Teams[0]:          "query.waiting_with",
			"/v1/bookings?site_id=" + live.Sites[0].ID:          "query.site_id",
		} {
			requireProblem(t, h.get(path), http.StatusUnprocessableEntity, "validation_failed", loc)
		}
	})
}

// Invalid UTF-8 inside a JSON string, and a \u escape of half a surrogate
// pair, are 400 bad_request on every operation that reads a body, rather
// than stored as U+FFFD.
func TestBody_InvalidUTF8IsBadRequest(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		v := createVisit(t, h, nil)
		for _, bad := range [][]byte{
			[]byte("{\"name\":\"Caf\xe9\"}"),        // Latin-1, not UTF-8
			[]byte("{\"name\":\"x\xff\xfey\"}"),     // bytes never in UTF-8
			[]byte("{\"name\":\"\xed\xa0\x80\"}"),   // a surrogate written as UTF-8
			[]byte("{\"name\":\"\xc0\xaf\"}"),       // an overlong form
			[]byte(`{"name":"\ud800"}`),             // a lone high surrogate
			[]byte(`{"name":"\udc00x"}`),            // a lone low surrogate
			[]byte(`{"name":"\ud83d\u0041"}`),       // a high surrogate with no low one after it
			[]byte("{\"name\":\"ok\",\"x\xff\":1}"), // in a key
		} {
			for _, target := range []struct{ method, path string }{
				{http.MethodPost, "/v1/teams"},
				{http.MethodPatch, "/v1/people/" + h.seed.Test.People[0]},
				{http.MethodPatch, "/v1/visits/" + v["id"].(string)},
			} {
				r := h.do(req{method: target.method, path: target.path, key: h.seed.Keys.SecretTest, raw: bad})
				requireProblem(t, r, http.StatusBadRequest, "bad_request")
				require.Contains(t, r.Body["detail"], "UTF-8", "%s %s %q", target.method, target.path, bad)
			}
		}
		// A pair, a character beyond the BMP written as UTF-8, and an
		// escaped backslash before a u are text.
		r := h.do(req{method: http.MethodPost, path: "/v1/teams", key: h.seed.Keys.SecretTest,
			raw: []byte(`{"name":"Caf\u00e9 \ud83d\ude00 ` + "\U0001F600" + ` \\ud800"}`)})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		require.Equal(t, "Café 😀 😀 \\ud800", r.Body["name"])
	})
}

// A visit may be expected at most 731 days ahead, so every visit accepted
// can be given its pass (a pass carries Unix seconds that end in 2106): the
// year 2200 is 422 at the field on create, PATCH and reschedule, where it was
// accepted and then failed with 500 when its pass was shown. The last day
// allowed has a pass.
func TestVisits_ExpectedTimesAreBoundedToWhatAPassCarries(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		now := h.clock.Now()
		far := "2200-01-01T10:00:00Z"
		tooFar := now.Add(cloud.MaxVisitAheadDays*24*time.Hour + time.Minute).Format(time.RFC3339)
		last := now.Add(cloud.MaxVisitAheadDays * 24 * time.Hour).Format(time.RFC3339)

		for _, at := range []string{far, tooFar, "9999-12-31T23:59:59Z"} {
			r := h.post("/v1/visits", visitBody(h, func(b map[string]any) { b["expected_at"] = at }))
			requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.expected_at")
		}
		r := h.post("/v1/visits", visitBody(h, func(b map[string]any) {
			b["expected_at"] = "2026-11-22T10:00:00Z"
			b["expected_until"] = far
		}))
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.expected_until")

		v := createVisit(t, h, nil)
		id := v["id"].(string)
		requireProblem(t, h.patch("/v1/visits/"+id, map[string]any{"expected_at": far}),
			http.StatusUnprocessableEntity, "validation_failed", "body.expected_at")
		requireProblem(t, h.patch("/v1/visits/"+id, map[string]any{"expected_until": far}),
			http.StatusUnprocessableEntity, "validation_failed", "body.expected_until")
		requireProblem(t, h.post("/v1/visits/"+id+"/reschedule", map[string]any{"expected_at": far}),
			http.StatusUnprocessableEntity, "validation_failed", "body.expected_at")

		// The last moment allowed is accepted and its pass shows.
		edge := createVisit(t, h, func(b map[string]any) { b["expected_at"] = last })
		png := h.get("/v1/visits/" + edge["id"].(string) + "/pass.png")
		require.Equal(t, http.StatusOK, png.Status, "%s", png.Raw)
		moved := h.post("/v1/visits/"+id+"/reschedule", map[string]any{"expected_at": last})
		require.Equal(t, http.StatusOK, moved.Status, "%s", moved.Raw)

		// Bookings make visits too: their slots are at most 366 days ahead.
		bt := createBookingType(t, h, nil)
		requireProblem(t, h.post("/v1/bookings", bookingBody(bt["id"].(string), "2200-01-06T09:00:00Z", nil)),
			http.StatusUnprocessableEntity, "validation_failed", "body.starts_at")
	})
}

// Webhook URLs are refused at creation (and update) when their host is an
// address the policy refuses in any spelling: every IPv6 form that carries a
// refused IPv4 address, the documentation ranges, site-local, and IPv4
// written in the forms inet_aton reads but netip does not. Test mode that
// may use loopback may use the loopback addresses, not loopback carried by
// another form.
func TestWebhooks_EveryAddressFormIsRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withPlan(cloud.PlanGrowth))
		create := func(key, u string) response {
			return h.do(req{method: http.MethodPost, path: "/v1/webhook-endpoints", key: key,
				body: map[string]any{"url": u, "event_types": []string{"*"}}})
		}
		refused := []string{
			"https://[::127.0.0.1]/in",               // IPv4-compatible loopback
			"https://[::7f00:1]/in",                  // the same, in hex
			"https://[::ffff:127.0.0.1]/in",          // IPv4-mapped
			"https://[::ffff:0:7f00:1]/in",           // IPv4-translated (SIIT)
			"https://[::ffff:0:a9fe:a9fe]/in",        // SIIT cloud metadata
			"https://[64:ff9b::7f00:1]/in",           // NAT64 loopback
			"https://[64:ff9b::a9fe:a9fe]/in",        // NAT64 cloud metadata
			"https://[64:ff9b::a00:1]/in",            // NAT64 private
			"https://[64:ff9b:1::808:808]/in",        // local-use NAT64
			"https://[2002:7f00:1::1]/in",            // 6to4 loopback
			"https://[2002:a9fe:a9fe::1]/in",         // 6to4 cloud metadata
			"https://[2001:0:7f00:1::f7f7:f7f7]/in",  // Teredo server loopback
			"https://[2001:0:808:808::80ff:fffe]/in", // Teredo client loopback
			"https://[fec0::1]/in",                   // site-local
			"https://[2001:db8::1]/in",               // documentation
			"https://[fe80::1%25eth0]/in",            // a zone
			"https://192.0.2.1/in",                   // documentation
			"https://198.51.100.7/in",                // documentation
			"https://203.0.113.9/in",                 // documentation
			"https://127.1/in",                       // inet_aton's 127.0.0.1
			"https://0x7f.0.0.1/in",                  // the same in hex
			"https://0177.0.0.1/in",                  // and in octal
			"https://hooks.example.2130706433/in",    // a numeric last label
			"https://../in",                          // empty labels (found by FuzzWebhookURL)
			"https://hooks..example.com/in",
		}
		for _, u := range refused {
			r := create(h.seed.Keys.SecretLive, u)
			requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.url")
		}
		for _, u := range []string{"https://[64:ff9b::808:808]/in", "https://[2002:808:808::1]/in", "https://8.8.8.8/in", "https://hooks.example.com/in"} {
			r := create(h.seed.Keys.SecretLive, u)
			require.Equal(t, http.StatusCreated, r.Status, "%s: %s", u, r.Raw)
		}

		h.svc.SetWebhookPolicy(cloud.WebhookPolicy{AllowLoopbackInTest: true})
		for _, u := range []string{"http://[::1]:9000/in", "http://127.0.0.1:9000/in", "http://[::ffff:127.0.0.1]:9000/in"} {
			r := create(h.seed.Keys.SecretTest, u)
			require.Equal(t, http.StatusCreated, r.Status, "%s: %s", u, r.Raw)
		}
		for _, u := range []string{"http://[::127.0.0.1]:9000/in", "http://[64:ff9b::7f00:1]:9000/in", "http://[2002:7f00:1::1]:9000/in"} {
			r := create(h.seed.Keys.SecretTest, u)
			requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.url")
		}
		// PATCH applies the same check.
		ep := create(h.seed.Keys.SecretTest, "http://127.0.0.1:9000/in")
		r := h.patch("/v1/webhook-endpoints/"+ep.Body["id"].(string), map[string]any{"url": "http://[::ffff:0:7f00:1]:9000/in"})
		requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.url")
	})
}

// passLinkOf returns the key-free link in a visit's pass message.
func passLinkOf(t *testing.T, h *harness, visitID string) string {
	t.Helper()
	for _, m := range data(t, h.get("/v1/messages?visit_id="+visitID)) {
		if link := regexp.MustCompile(`/v1/passes/[A-Za-z0-9_.-]+`).FindString(m["body"].(string)); link != "" {
			return link
		}
	}
	t.Fatalf("no pass link in the messages of %s", visitID)
	return ""
}

// The key-free pass link is rate limited per link and per client address,
// each per calendar minute: a spent budget is 429 rate_limited with
// Retry-After and the RateLimit headers, as the keyed operations' limit
// is; a new minute starts afresh.
func TestPassLink_RateLimitedPerLinkAndPerAddress(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open, withConfig(func(c *httpapi.Config) { c.PassLinkLimit, c.PassAddressLimit = 3, 5 }))
		one := passLinkOf(t, h, createVisit(t, h, nil)["id"].(string))
		two := passLinkOf(t, h, createVisit(t, h, nil)["id"].(string))
		get := func(link string) response { return h.do(req{method: http.MethodGet, path: link}) }

		// Per link: 3 a minute. The headers follow the tighter budget: the
		// link's (3) until the address's (5) has fewer left.
		for i := 1; i <= 3; i++ {
			r := get(one)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
			require.Equal(t, "3", r.Header.Get("RateLimit-Limit"))
			require.Equal(t, strconv.Itoa(3-i), r.Header.Get("RateLimit-Remaining"))
			require.Equal(t, "60", r.Header.Get("RateLimit-Reset"))
		}
		r := get(one)
		requireProblem(t, r, http.StatusTooManyRequests, "rate_limited")
		require.Equal(t, "60", r.Header.Get("Retry-After"))
		require.Equal(t, "0", r.Header.Get("RateLimit-Remaining"))
		require.Contains(t, r.Body["detail"], "pass")

		// Per address: 5 a minute whatever the link, links that are not the
		// server's included. Requests 1-4 were to one; this is the 5th.
		r = get(two)
		require.Equal(t, http.StatusOK, r.Status, "another link has its own budget: %s", r.Raw)
		require.Equal(t, "5", r.Header.Get("RateLimit-Limit"))
		require.Equal(t, "0", r.Header.Get("RateLimit-Remaining"))
		for _, link := range []string{two, "/v1/passes/bm90.b3Vycw"} {
			r = get(link)
			requireProblem(t, r, http.StatusTooManyRequests, "rate_limited")
			require.Equal(t, "60", r.Header.Get("Retry-After"))
			require.Contains(t, r.Body["detail"], "address")
		}

		// A new minute.
		h.clock.Advance(time.Minute)
		require.Equal(t, http.StatusOK, get(one).Status)
		requireProblem(t, get("/v1/passes/bm90.b3Vycw"), http.StatusNotFound, "not_found")
	})
}

// The client address is the peer's unless the peer is a trusted proxy:
// without trusted proxies X-Forwarded-For is ignored, so a client cannot
// take a new budget by sending one; behind a trusted proxy the address it
// appends counts, and what the client wrote to its left does not.
func TestPassLink_ClientAddressFromTrustedProxiesOnly(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		limits := func(c *httpapi.Config) { c.PassLinkLimit, c.PassAddressLimit = 100, 2 }
		h := newHarness(t, open, withConfig(limits))
		link := passLinkOf(t, h, createVisit(t, h, nil)["id"].(string))
		from := func(xff string) response {
			return h.do(req{method: http.MethodGet, path: link, header: map[string]string{"X-Forwarded-For": xff}})
		}
		require.Equal(t, http.StatusOK, from("203.0.113.1").Status)
		require.Equal(t, http.StatusOK, from("203.0.113.2").Status)
		requireProblem(t, from("203.0.113.3"), http.StatusTooManyRequests, "rate_limited")

		behind := newHarness(t, open, withConfig(func(c *httpapi.Config) {
			limits(c)
			c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
		}))
		link = passLinkOf(t, behind, createVisit(t, behind, nil)["id"].(string))
		from = func(xff string) response {
			return behind.do(req{method: http.MethodGet, path: link, header: map[string]string{"X-Forwarded-For": xff}})
		}
		require.Equal(t, http.StatusOK, from("203.0.113.1").Status)
		require.Equal(t, http.StatusOK, from("198.51.100.9, 203.0.113.1").Status)
		requireProblem(t, from("198.51.100.10, 203.0.113.1"), http.StatusTooManyRequests, "rate_limited")
		requireProblem(t, from("203.0.113.1, 127.0.0.1"), http.StatusTooManyRequests, "rate_limited")
		require.Equal(t, http.StatusOK, from("203.0.113.2").Status, "another client behind the proxy")
		// IPv6 clients count by /64.
		require.Equal(t, http.StatusOK, from("2001:db8:1:2::1").Status)
		require.Equal(t, http.StatusOK, from("2001:db8:1:2::2").Status)
		requireProblem(t, from("2001:db8:1:2:ffff::3"), http.StatusTooManyRequests, "rate_limited")
		require.Equal(t, http.StatusOK, from("2001:db8:1:3::1").Status)
	})
}

// TestQuery_TextThatNoStoreTakesIs422: a query parameter holding a NUL or
// bytes that are not UTF-8 is 422 at the parameter on every list, before
// any filter is read. It reached the stores, and was a 500: PostgreSQL
// refuses the bytes, SQLite's full-text search stops at a NUL. Search
// syntax of SQL, LIKE and FTS5 is matched as text: 200.
func TestQuery_TextThatNoStoreTakesIs422(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		for _, path := range []string{"/v1/people?q=", "/v1/teams?q=", "/v1/people?email=", "/v1/audit-events?object_id="} {
			loc := "query." + path[strings.IndexByte(path, '?')+1:len(path)-1]
			for _, bad := range []string{"abc\x00def", "\x00", "abc\xffdef", "\xff\xfe\xfd"} {
				requireProblem(t, h.get(path+url.QueryEscape(bad)), http.StatusUnprocessableEntity, "validation_failed", loc)
			}
			for _, text := range []string{`"`, `abc"`, `NEAR(abc def)`, `-abc`, `abc*`, `%_\`, `'; DROP TABLE people; --`, "ab\x01cd"} {
				r := h.get(path + url.QueryEscape(text))
				require.Equal(t, http.StatusOK, r.Status, "%s%q: %s", path, text, r.Raw)
			}
		}
	})
}
