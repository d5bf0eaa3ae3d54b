package httpapi_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// Tests of docs/decisions.md, "Keys, scopes and what a publishable key may
// see (issue 15)".

// vera is the visitor visitBody invites: what the organisation holds about
// her once a secret key has invited her.
var vera = struct{ name, email, phone, company string }{"Vera Visitor", "vera@example.org", "+447700900123", "Acme"}

// requireNoVera fails when raw shows anything the organisation holds about
// vera beyond what the caller sent (sent lists the values it did send).
func requireNoVera(t *testing.T, raw []byte, sent ...string) {
	t.Helper()
	rest := strings.ToLower(string(raw))
	for _, s := range sent {
		rest = strings.ReplaceAll(rest, strings.ToLower(s), "")
	}
	for _, v := range []string{"vera", vera.email, vera.phone, vera.company} {
		require.NotContains(t, rest, strings.ToLower(v), "nothing stored about vera that was not sent: %s", raw)
	}
}

// requireSentOnlyTo checks every message about the visit went to to, and
// that none names vera.
func requireSentOnlyTo(t *testing.T, h *harness, visitID, to string) {
	t.Helper()
	msgs := messagesOf(t, h, visitID)
	require.NotEmpty(t, msgs, "the pass went out")
	for _, m := range msgs {
		require.Equal(t, to, m["to"], "only to the contact given: %v", m)
		require.NotContains(t, m["body"], "Vera", "the message greets whom the caller named")
	}
}

// A publishable key that gives only an existing visitor's email, or only
// their phone, gets back what it sent and a visitor ID of its own, and the
// pass goes to what it gave, not to what the organisation holds.
func TestPublishable_PreRegistrationShowsOnlyWhatItSent(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		putTour(t, h, nil)
		pk := h.seed.Keys.PublishableTest
		invited := createVisit(t, h, nil) // vera, by a secret key
		veraID := invited["visitor"].(map[string]any)["id"].(string)

		for _, c := range []struct {
			name, field, value, channel string
		}{
			{"email only", "email", "VERA@example.org", "email"},
			{"phone only", "phone", vera.phone, "sms"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := h.do(req{method: http.MethodPost, path: "/v1/visits", key: pk, body: visitBody(h, func(b map[string]any) {
					b["visitor"] = map[string]any{"name": "Mallory", c.field: c.value}
				})})
				require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
				requireNoVera(t, r.Raw, c.value)
				got := r.Body["visitor"].(map[string]any)
				want := map[string]any{"id": got["id"], "name": "Mallory", "email": nil, "phone": nil, "company": nil}
				want[c.field] = c.value
				require.Equal(t, want, got, "the visitor is exactly what was sent")
				require.NotEqual(t, veraID, got["id"], "a visitor ID of its own: an old one would tell vera is known, and since when")
				require.Equal(t, []any{c.channel}, r.Body["pass"].(map[string]any)["channels"])
				for _, host := range r.Body["hosts"].([]any) {
					require.Empty(t, host.(map[string]any)["name"], "a publishable key reads no names of people")
				}
				requireSentOnlyTo(t, h, r.Body["id"].(string), c.value)
			})
		}

		t.Run("approved later: the pass still goes only where the caller said", func(t *testing.T) {
			r := h.do(req{method: http.MethodPost, path: "/v1/visits", key: pk, body: visitBody(h, func(b map[string]any) {
				b["type"] = "site_tour"
				b["visitor"] = map[string]any{"name": "Mallory", "email": vera.email}
			})})
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			requireNoVera(t, r.Raw, vera.email)
			id := r.Body["id"].(string)
			require.Equal(t, http.StatusOK, action(h, id, "approve", nil).Status)
			requireSentOnlyTo(t, h, id, vera.email)
			require.Equal(t, http.StatusOK, action(h, id, "resend-pass", nil).Status)
			requireSentOnlyTo(t, h, id, vera.email)
		})

		t.Run("a secret key still finds vera's own record, not one a publishable key made", func(t *testing.T) {
			v := createVisit(t, h, func(b map[string]any) {
				b["visitor"] = map[string]any{"name": "V. Visitor", "email": vera.email}
			})
			got := v["visitor"].(map[string]any)
			require.Equal(t, veraID, got["id"])
			require.Equal(t, vera.name, got["name"])
			require.Equal(t, vera.phone, got["phone"])
		})
	})
}

// The same for bookings: confirmed at once, or pending and confirmed later.
func TestPublishable_BookingShowsOnlyWhatItSent(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		pk := h.seed.Keys.PublishableTest
		createVisit(t, h, nil) // vera, by a secret key
		for _, confirm := range []bool{false, true} {
			bt := createBookingType(t, h, func(b map[string]any) { b["requires_confirmation"] = confirm })
			r := h.do(req{method: http.MethodPost, path: "/v1/bookings", key: pk, body: bookingBody(bt["id"].(string), monday9,
				func(b map[string]any) { b["visitor"] = map[string]any{"name": "Mallory", "email": vera.email} })})
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			requireNoVera(t, r.Raw, vera.email)
			require.Equal(t, map[string]any{"id": r.Body["visitor"].(map[string]any)["id"], "name": "Mallory", "email": vera.email,
				"phone": nil, "company": nil}, r.Body["visitor"])
			visitID, _ := r.Body["visit_id"].(string)
			if confirm {
				c := bookingAction(h, r.Body["id"].(string), "confirm", nil)
				require.Equal(t, http.StatusOK, c.Status, "%s", c.Raw)
				visitID = c.Body["visit_id"].(string)
			}
			requireSentOnlyTo(t, h, visitID, vera.email)
		}
	})
}

// A host who invited vera can replace her visit with a slot she booked
// herself through a publishable key: her own booking has a record of its
// own, and is still hers by its address.
func TestReschedule_ToABookingTheVisitorMadeThemselves(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		bt := createBookingType(t, h, nil)
		v := createVisit(t, h, nil)
		r := h.do(req{method: http.MethodPost, path: "/v1/bookings", key: h.seed.Keys.PublishableTest, body: bookingBody(bt["id"].(string), monday9,
			func(b map[string]any) { b["visitor"] = map[string]any{"name": "Vera", "email": "VERA@example.org"} })})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		moved := action(h, v["id"].(string), "reschedule", map[string]any{"booking_id": r.Body["id"]})
		require.Equal(t, http.StatusOK, moved.Status, "%s", moved.Raw)
		require.Equal(t, r.Body["id"], moved.Body["rescheduled_to"].(map[string]any)["booking_id"])
	})
}

// errorMessage is the one problem a 422 at location carries.
func errorMessage(t *testing.T, r response, location string) string {
	t.Helper()
	requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", location)
	return r.Body["errors"].([]any)[0].(map[string]any)["message"].(string)
}

// A host, team, visit type or booking type a publishable key cannot use is
// refused exactly as one that does not exist: the answer tells nothing of
// what the organisation holds (a deactivated person's name, an archived
// team, a closed type).
func TestPublishable_ErrorsTellNothingStored(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		pk := h.seed.Keys.PublishableTest
		previsit := func(change func(map[string]any)) response {
			return h.do(req{method: http.MethodPost, path: "/v1/visits", key: pk, body: visitBody(h, change)})
		}

		person := h.post("/v1/people", map[string]any{"name": "Dora Departed"}).Body["id"].(string)
		require.Equal(t, http.StatusOK, h.post("/v1/people/"+person+"/deactivate", nil).Status)
		unknown := errorMessage(t, previsit(func(b map[string]any) { b["host_id"] = ids.New(ids.Person) }), "body.host_id")
		got := errorMessage(t, previsit(func(b map[string]any) { b["host_id"] = person }), "body.host_id")
		require.Equal(t, unknown, got)
		require.NotContains(t, got, "Dora")

		noTeam := func(b map[string]any) { delete(b, "host_id"); b["team_id"] = ids.New(ids.Team) }
		unknown = errorMessage(t, previsit(noTeam), "body.team_id")
		closed := h.post("/v1/teams", map[string]any{"name": "Closed", "visitors_can_choose": false}).Body["id"].(string)
		archived := h.post("/v1/teams", map[string]any{"name": "Gone"}).Body["id"].(string)
		require.Equal(t, http.StatusOK, h.patch("/v1/teams/"+archived, map[string]any{"archived": true}).Status)
		for _, team := range []string{closed, archived} {
			require.Equal(t, unknown, errorMessage(t, previsit(func(b map[string]any) { delete(b, "host_id"); b["team_id"] = team }), "body.team_id"))
		}

		putTour(t, h, func(vt *cloud.VisitType) { vt.Key, vt.Enabled = "off_tour", false })
		unknown = errorMessage(t, previsit(func(b map[string]any) { b["type"] = "no_such_type" }), "body.type")
		for _, key := range []string{"delivery", "off_tour"} { // closed to pre-registration, turned off
			require.Equal(t, strings.Replace(unknown, "no_such_type", key, 1),
				errorMessage(t, previsit(func(b map[string]any) { b["type"] = key }), "body.type"))
		}

		bt := createBookingType(t, h, nil)
		require.Equal(t, http.StatusOK, h.patch("/v1/booking-types/"+bt["id"].(string), map[string]any{"archived": true}).Status)
		book := func(id string) response {
			return h.do(req{method: http.MethodPost, path: "/v1/bookings", key: pk, body: bookingBody(id, monday9, nil)})
		}
		require.Equal(t, errorMessage(t, book(ids.New(ids.BookingType)), "body.booking_type_id"),
			errorMessage(t, book(bt["id"].(string)), "body.booking_type_id"), "an archived type is one it cannot read")
	})
}

// A response is replayed only to the key it answered: a publishable key
// sending a secret key's Idempotency-Key and body does not get the secret
// key's answer.
func TestIdempotency_ReplayedOnlyToTheSameKey(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		key := uuid()
		send := func(apiKey string) response {
			return h.do(req{method: http.MethodPost, path: "/v1/visits", key: apiKey, body: visitBody(h, nil),
				header: map[string]string{"Idempotency-Key": key}})
		}
		first := send(h.seed.Keys.SecretTest)
		require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
		r := send(h.seed.Keys.PublishableTest)
		requireProblem(t, r, http.StatusUnprocessableEntity, "idempotency_key_reused")
		require.Empty(t, r.Header.Get("Idempotent-Replayed"))
		require.NotContains(t, string(r.Raw), first.Body["id"].(string))
		again := send(h.seed.Keys.SecretTest)
		require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"), "the key that made it still gets its replay")
		require.Equal(t, first.Raw, again.Raw)
	})
}

// Tokens and pass links as they appear in a body.
var (
	passTokenRe = regexp.MustCompile(`[PE]1:[A-Z2-7]{20,}`)
	passLinkRe  = regexp.MustCompile(`/v1/passes/[A-Za-z0-9_.-]+`)
)

// newKey makes a secret test-mode key carrying scopes.
func newKey(t *testing.T, h *harness, scopes ...cloud.Scope) string {
	t.Helper()
	_, secret, err := h.svc.CreateKey(t.Context(), h.testTenant(), cloud.KindSecret, scopes)
	require.NoError(t, err)
	return secret
}

// Every endpoint whose answer carries a pass (a token, its QR code, or a
// link that shows it) needs a write scope: its read scope alone is
// scope_missing naming the write scope, the write scope alone serves it.
func TestScopes_PassesNeedAWriteScope(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		person := h.seed.Test.People[0]
		visit := createVisit(t, h, nil)["id"].(string)
		for _, c := range []struct {
			method, path string
			read, write  cloud.Scope
			pass         func(t *testing.T, r response) // finds the pass in a 200
		}{
			{http.MethodGet, "/v1/people/" + person + "/pass", cloud.ScopePeopleRead, cloud.ScopePeopleWrite, func(t *testing.T, r response) {
				require.Regexp(t, passTokenRe, r.Body["token"])
			}},
			{http.MethodGet, "/v1/people/" + person + "/pass.png", cloud.ScopePeopleRead, cloud.ScopePeopleWrite, func(t *testing.T, r response) {
				require.Regexp(t, passTokenRe, decodeQR(t, r.Raw))
			}},
			{http.MethodPost, "/v1/people/" + person + "/reissue-pass", cloud.ScopePeopleRead, cloud.ScopePeopleWrite, func(t *testing.T, r response) {
				require.Regexp(t, passTokenRe, r.Body["token"])
			}},
			{http.MethodGet, "/v1/visits/" + visit + "/pass.png", cloud.ScopeVisitsRead, cloud.ScopeVisitsWrite, func(t *testing.T, r response) {
				require.Regexp(t, passTokenRe, decodeQR(t, r.Raw))
			}},
			{http.MethodGet, "/v1/messages?visit_id=" + visit, cloud.ScopeVisitsRead, cloud.ScopeVisitsWrite, func(t *testing.T, r response) {
				link := passLinkRe.FindString(string(r.Raw))
				require.NotEmpty(t, link, "the outbox holds the pass link: %s", r.Raw)
				shown := h.do(req{method: http.MethodGet, path: link})
				require.Equal(t, http.StatusOK, shown.Status, "the link shows the pass without a key: %s", shown.Raw)
				require.Regexp(t, passTokenRe, decodeQR(t, shown.Raw))
			}},
		} {
			t.Run(c.method+" "+c.path, func(t *testing.T) {
				r := h.do(req{method: c.method, path: c.path, key: newKey(t, h, c.read)})
				requireProblem(t, r, http.StatusForbidden, "scope_missing")
				require.Contains(t, r.Body["detail"], string(c.write))
				require.NotRegexp(t, passTokenRe, string(r.Raw))
				r = h.do(req{method: c.method, path: c.path, key: newKey(t, h, c.write)})
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
				c.pass(t, r)
			})
		}
	})
}

// A key with every read scope and no write scope reads every operation it
// may call, and no answer carries a pass token, a pass link, or a QR image:
// read scopes never hand out a credential that opens a door.
func TestScopes_ReadOnlyKeysNeverSeeAPass(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		var reads []cloud.Scope
		for _, s := range cloud.Scopes {
			if strings.HasSuffix(string(s), ":read") {
				reads = append(reads, s)
			}
		}
		key := newKey(t, h, reads...)

		// Something of every kind, each with its pass made and sent.
		site, person := london(h), h.seed.Test.People[0]
		v := createVisit(t, h, nil)
		require.Equal(t, http.StatusOK, action(h, v["id"].(string), "check-in", map[string]any{"override_pass_rules": true}).Status)
		require.Equal(t, http.StatusOK, h.post("/v1/people/"+person+"/reissue-pass", nil).Status)
		bt := createBookingType(t, h, nil)
		b := book(t, h, bt["id"].(string), monday9, nil)
		punch := mustPunch(t, h, person, site.ID, "in", h.clock.Now().Add(-time.Hour))
		params := map[string]string{
			"site_id": site.ID, "gate_id": site.Gates[0], "person_id": person, "team_id": h.seed.Test.Teams[0],
			"visit_type": "meeting", "visit_id": v["id"].(string), "visitor_id": v["visitor"].(map[string]any)["id"].(string),
			"booking_type_id": bt["id"].(string), "booking_id": b["id"].(string), "attendance_event_id": punch["id"].(string),
			"timesheet_period_id": data(t, h.get("/v1/timesheet-periods"))[0]["id"].(string),
			"timesheet_id":        data(t, h.get("/v1/timesheets"))[0]["id"].(string),
			"event_id":            data(t, h.get("/v1/events"))[0]["id"].(string),
			"webhook_endpoint_id": ids.New(ids.WebhookEndpoint), // refused for the scope before it is looked up
			"edge_id":             h.demoEdge(t),
		}
		params["rollout_id"] = createTestRollout(t, h)
		queries := map[string]string{
			"/v1/booking-types/{booking_type_id}/slots": "?from=2026-11-23&to=2026-11-24",
			"/v1/attendance-summaries":                  "?from=2026-11-01&to=2026-11-30",
		}
		isRead := func(s cloud.Scope) bool { return strings.HasSuffix(string(s), ":read") }
		read := 0
		for _, op := range h.api.Operations() {
			method, path, _ := strings.Cut(op.Route, " ")
			if !isRead(op.Scope) {
				r := h.do(req{method: method, path: fill(t, path, params), key: key, body: map[string]any{}})
				requireProblem(t, r, http.StatusForbidden, "scope_missing")
				continue
			}
			require.Equal(t, http.MethodGet, method, "%s: a read scope only reads", op.Route)
			r := h.do(req{method: method, path: fill(t, path, params) + queries[path], key: key})
			require.Equal(t, http.StatusOK, r.Status, "%s: %s", op.Route, r.Raw)
			require.Contains(t, r.Header.Get("Content-Type"), "application/json", "%s: a read answers JSON, never a QR image", op.Route)
			require.NotRegexp(t, passTokenRe, string(r.Raw), op.Route)
			require.NotRegexp(t, passLinkRe, string(r.Raw), op.Route)
			read++
		}
		require.Greater(t, read, 30, "the walk reached the read operations")
	})
}

// fill puts params into a route's {name} segments.
func fill(t *testing.T, path string, params map[string]string) string {
	t.Helper()
	return regexp.MustCompile(`\{[a-z_]+\}`).ReplaceAllStringFunc(path, func(m string) string {
		v, ok := params[m[1:len(m)-1]]
		require.True(t, ok, "no value for %s in %s: add one", m, path)
		return v
	})
}

// The OpenAPI document names, for every operation, the scope and live-mode
// plan the router asks for, and says whether a publishable key may call
// it.
func TestOpenAPI_ScopesAreTheRouters(t *testing.T) {
	spec := loadOpenAPI(t)
	srv, _ := newOpenAPIServer(t)
	ops := srv.Operations()
	require.NotEmpty(t, ops)
	for _, op := range ops {
		method, path, _ := strings.Cut(op.Route, " ")
		item := spec.doc.Paths.Value(strings.TrimPrefix(path, openAPIBase))
		require.NotNil(t, item, op.Route)
		doc := item.GetOperation(method)
		require.NotNil(t, doc, op.Route)
		require.Equal(t, string(op.Scope), doc.Extensions["x-svc-scope"], "%s: x-svc-scope", op.Route)
		require.Equal(t, string(op.LivePlan), doc.Extensions["x-svc-live-plan"], "%s: x-svc-live-plan", op.Route)
		require.Equal(t, !op.Publishable, strings.Contains(doc.Description, "Publishable keys cannot call it"),
			"%s: the description says whether a publishable key may call it", op.Route)
	}
}

// The scope table of docs/decisions.md is the router's, row for row.
func TestDecisions_ScopeTable(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "decisions.md"))
	require.NoError(t, err)
	const heading = "## Keys, scopes and what a publishable key may see (issue 15)\n"
	_, section, ok := strings.Cut(string(raw), heading)
	require.True(t, ok, "docs/decisions.md has the section %q", heading)
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `((?:GET|POST|PATCH|DELETE) /\\S*)` \\| ([^|]+?) \\| ([^|]+?) \\|")
	documented := map[string][2]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		_, dup := documented[m[1]]
		require.False(t, dup, "%s is in the table once", m[1])
		documented[m[1]] = [2]string{m[2], m[3]}
	}
	srv, _ := newOpenAPIServer(t)
	for _, op := range srv.Operations() {
		name := strings.Replace(op.Route, " "+openAPIBase+"/", " /", 1)
		keys := "secret"
		if op.Publishable {
			keys = "secret, publishable"
		}
		require.Equal(t, [2]string{"`" + string(op.Scope) + "`", keys}, documented[name], "the table's row for %s", name)
		delete(documented, name)
	}
	require.Equal(t, map[string][2]string{
		"GET /passes/{link}":   {"none", "anyone with the link"},
		"GET /openapi.json":    {"none", "anyone"},
		"POST /enrolments":     {"none", "an appliance, signed with its identity key"},
		"GET /enrolments/self": {"none", "an appliance, signed with its identity key"},
	}, documented, "the table's other rows are the operations that take no key")
}
