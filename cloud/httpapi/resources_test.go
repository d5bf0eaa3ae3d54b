package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
)

func TestOrganisation_Get(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		r := h.get("/v1/organisation")
		require.Equal(t, http.StatusOK, r.Status)
		require.Equal(t, h.seed.Organisation.ID, r.Body["id"])
		require.Equal(t, "pro", r.Body["plan"])
		require.Equal(t, "test", r.Body["mode"])
	})
}

func TestTeams_ListAsSpecified(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		ctx := context.Background()
		all, _, err := h.store.ListTeams(ctx, h.testTenant(), cloud.TeamFilter{IncludeArchived: true}, cloud.Page{Limit: 100})
		require.NoError(t, err)
		byID := map[string]cloud.Team{}
		for _, tm := range all {
			byID[tm.ID] = tm
		}
		check := func(query string, want func(cloud.Team) bool) {
			t.Helper()
			rows := data(t, h.get("/v1/teams?limit=100&"+query))
			var wantIDs []string
			for _, tm := range all {
				if want(tm) {
					wantIDs = append(wantIDs, tm.ID)
				}
			}
			require.NotEmpty(t, wantIDs, "query %q should match something", query)
			require.Equal(t, wantIDs, idsOf(rows), "query %q", query)
			for i := 1; i < len(rows); i++ {
				require.GreaterOrEqual(t, rows[i-1]["created_at"], rows[i]["created_at"], "newest first")
			}
		}
		site := h.seed.Test.Sites[0].ID
		check("", func(tm cloud.Team) bool { return !tm.Archived })
		check("include_archived=true", func(cloud.Team) bool { return true })
		check("include_archived=false", func(tm cloud.Team) bool { return !tm.Archived })
		check("q=SUPPORT", func(tm cloud.Team) bool { return !tm.Archived && contains(tm.Name, "support") })
		check("q=port&include_archived=true", func(tm cloud.Team) bool { return contains(tm.Name, "port") })
		check("q=sales", func(tm cloud.Team) bool { return !tm.Archived && contains(tm.Name, "sales") })
		check("site_id="+site, func(tm cloud.Team) bool { return !tm.Archived && (tm.SiteID == site || tm.SiteID == "") })
		check("visitors_can_choose=false", func(tm cloud.Team) bool { return !tm.Archived && !tm.VisitorsCanChoose })
		check("visitors_can_choose=true&site_id="+site+"&q=s", func(tm cloud.Team) bool {
			return !tm.Archived && tm.VisitorsCanChoose && (tm.SiteID == site || tm.SiteID == "") && contains(tm.Name, "s")
		})
		require.Empty(t, data(t, h.get("/v1/teams?q="+url.QueryEscape("%"))), "% is literal, not a wildcard")

		// Each team carries its members with their active flag.
		tm := h.get("/v1/teams/" + all[0].ID)
		members := tm.Body["members"].([]any)
		require.Len(t, members, len(byID[all[0].ID].Members))
		first := members[0].(map[string]any)
		require.Equal(t, byID[all[0].ID].Members[0].ID, first["id"])
		if first["active"] == true {
			_, err = h.svc.SetPersonActive(ctx, h.testTenant(), first["id"].(string), false)
			require.NoError(t, err)
			tm = h.get("/v1/teams/" + all[0].ID)
			require.Equal(t, false, tm.Body["members"].([]any)[0].(map[string]any)["active"])
		}

		requireProblem(t, h.get("/v1/teams?q="+strings.Repeat("x", 81)), http.StatusUnprocessableEntity, "validation_failed", "query.q")
		require.Equal(t, http.StatusOK, h.get("/v1/teams?q="+strings.Repeat("x", 80)).Status)
		requireProblem(t, h.get("/v1/teams?include_archived=yes&visitors_can_choose=1"), http.StatusUnprocessableEntity, "validation_failed",
			"query.include_archived", "query.visitors_can_choose")
		requireProblem(t, h.get("/v1/teams?site_id=nope"), http.StatusUnprocessableEntity, "validation_failed", "query.site_id")
		requireProblem(t, h.get("/v1/teams?site_id="+h.seed.Live.Sites[0].ID), http.StatusUnprocessableEntity, "validation_failed", "query.site_id")
	})
}

func TestPagination_LimitsAndCursors(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		for _, bad := range []string{"0", "101", "-1", "ten", "2.5", ""} {
			requireProblem(t, h.get("/v1/teams?limit="+bad), http.StatusUnprocessableEntity, "validation_failed", "query.limit")
		}
		r := h.get("/v1/people?limit=2")
		require.Len(t, data(t, r), 2)
		require.Equal(t, true, r.Body["has_more"])
		cursor := r.Body["next_cursor"].(string)
		require.LessOrEqual(t, len(cursor), 512)

		tampered := []byte(cursor)
		tampered[len(tampered)/2] ^= 1
		requireProblem(t, h.get("/v1/people?cursor="+url.QueryEscape(string(tampered))), http.StatusUnprocessableEntity, "validation_failed", "query.cursor")
		requireProblem(t, h.get("/v1/people?cursor="+strings.Repeat("A", 513)), http.StatusUnprocessableEntity, "validation_failed", "query.cursor")
		requireProblem(t, h.get("/v1/people?active=true&cursor="+cursor), http.StatusUnprocessableEntity, "validation_failed", "query.cursor")
		requireProblem(t, h.get("/v1/teams?cursor="+cursor), http.StatusUnprocessableEntity, "validation_failed", "query.cursor")
		requireProblem(t, h.do(req{method: http.MethodGet, path: "/v1/people?cursor=" + cursor, key: h.seed.Keys.SecretLive}), http.StatusUnprocessableEntity, "validation_failed", "query.cursor")
		require.Len(t, data(t, h.get("/v1/people?limit=2&cursor="+cursor)), 2)

		last := h.get("/v1/people?limit=100")
		require.Nil(t, last.Body["next_cursor"])
		require.Equal(t, false, last.Body["has_more"])
	})
}

func TestPagination_StableWhileInserting(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		before := idsOf(data(t, h.get("/v1/teams?limit=100&include_archived=true")))
		var walked []string
		path := "/v1/teams?limit=5&include_archived=true"
		for i := 0; ; i++ {
			r := h.get(path)
			walked = append(walked, idsOf(data(t, r))...)
			// Rows added between pages, some in the same millisecond.
			h.post("/v1/teams", map[string]any{"name": "Inserted"})
			if i%2 == 0 {
				h.clock.Advance(time.Second)
			}
			if r.Body["next_cursor"] == nil {
				break
			}
			path = "/v1/teams?limit=5&include_archived=true&cursor=" + url.QueryEscape(r.Body["next_cursor"].(string))
		}
		require.Equal(t, before, walked)
	})
}

func TestPeople_Lifecycle(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		site := h.seed.Test.Sites[1].ID
		r := h.post("/v1/people", map[string]any{"name": "Rosalind Franklin", "email": "Rosalind@Example.com", "phone": "+442071838750", "job_title": "Chemist", "site_id": site})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		id := r.Body["id"].(string)
		require.Equal(t, "/v1/people/"+id, r.Header.Get("Location"))
		require.Equal(t, true, r.Body["active"])
		require.Nil(t, r.Body["deactivated_at"])

		requireProblem(t, h.post("/v1/people", map[string]any{"name": "Imposter", "email": "rosalind@example.COM"}), http.StatusConflict, "conflict", "body.email")
		other := h.post("/v1/people", map[string]any{"name": "Maurice Wilkins"})
		require.Equal(t, http.StatusCreated, other.Status)
		require.Nil(t, other.Body["email"])
		requireProblem(t, h.patch("/v1/people/"+other.Body["id"].(string), map[string]any{"email": "ROSALIND@example.com"}), http.StatusConflict, "conflict", "body.email")

		p := h.patch("/v1/people/"+id, map[string]any{"job_title": nil, "phone": "+14155550100"})
		require.Equal(t, http.StatusOK, p.Status, "%s", p.Raw)
		require.Nil(t, p.Body["job_title"])
		require.Equal(t, "+14155550100", p.Body["phone"])
		require.Equal(t, "Rosalind Franklin", p.Body["name"])

		found := data(t, h.get("/v1/people?email=rosalind%40example.com"))
		require.Equal(t, []string{id}, idsOf(found))
		found = data(t, h.get("/v1/people?q=FRANK&site_id="+site))
		require.Equal(t, []string{id}, idsOf(found))

		d := h.post("/v1/people/"+id+"/deactivate", nil)
		require.Equal(t, http.StatusOK, d.Status, "%s", d.Raw)
		require.Equal(t, false, d.Body["active"])
		require.NotNil(t, d.Body["deactivated_at"])
		again := h.post("/v1/people/"+id+"/deactivate", nil)
		requireProblem(t, again, http.StatusConflict, "invalid_state")
		require.Contains(t, again.Body["detail"], "inactive")
		require.Contains(t, idsOf(data(t, h.get("/v1/people?active=false&limit=100"))), id)
		require.NotContains(t, idsOf(data(t, h.get("/v1/people?active=true&limit=100"))), id)
		re := h.post("/v1/people/"+id+"/reactivate", nil)
		require.Equal(t, true, re.Body["active"])
		requireProblem(t, h.post("/v1/people/"+id+"/reactivate", nil), http.StatusConflict, "invalid_state")
		requireProblem(t, h.post("/v1/people/"+id+"/reactivate", map[string]any{"reason": "x"}), http.StatusUnprocessableEntity, "validation_failed", "body.reason")
	})
}

func TestSitesAndGates_Lifecycle(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		s := h.post("/v1/sites", map[string]any{"name": "Berlin", "timezone": "Europe/Berlin",
			"address": map[string]any{"line1": "Unter den Linden 1", "city": "Berlin", "country": "DE"}})
		require.Equal(t, http.StatusCreated, s.Status, "%s", s.Raw)
		site := s.Body["id"].(string)
		require.Nil(t, s.Body["address"].(map[string]any)["line2"])

		g := h.post("/v1/gates", map[string]any{"site_id": site, "name": "Door", "direction": "entry"})
		require.Equal(t, http.StatusCreated, g.Status, "%s", g.Raw)
		gate := g.Body["id"].(string)
		requireProblem(t, h.post("/v1/gates", map[string]any{"site_id": h.seed.Live.Sites[0].ID, "name": "Door", "direction": "sideways"}),
			http.StatusUnprocessableEntity, "validation_failed", "body.site_id", "body.direction")
		requireProblem(t, h.patch("/v1/gates/"+gate, map[string]any{"site_id": h.seed.Test.Sites[0].ID}), http.StatusUnprocessableEntity, "validation_failed", "body.site_id")
		u := h.patch("/v1/gates/"+gate, map[string]any{"direction": "both"})
		require.Equal(t, "both", u.Body["direction"])
		require.Equal(t, []string{gate}, idsOf(data(t, h.get("/v1/gates?site_id="+site))))

		u = h.patch("/v1/sites/"+site, map[string]any{"address": nil, "timezone": "Europe/Paris"})
		require.Equal(t, http.StatusOK, u.Status, "%s", u.Raw)
		require.Nil(t, u.Body["address"])
		require.Equal(t, "Europe/Paris", u.Body["timezone"])
		require.Equal(t, site, idsOf(data(t, h.get("/v1/sites?limit=1")))[0], "newest first")
	})
}

// A site's wait limit (docs/decisions.md, "Waiting reminders"): 10 unless
// given, an integer from 1 to 240 on create and update (anything else is
// validation_failed at body.wait_limit_minutes, nothing changed), and a
// change goes out on the site's feed with the rest of its settings.
func TestSites_WaitLimit(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		s := h.post("/v1/sites", map[string]any{"name": "Lisbon", "timezone": "Europe/Lisbon"})
		require.Equal(t, http.StatusCreated, s.Status, "%s", s.Raw)
		require.Equal(t, float64(cloud.DefaultWaitLimitMinutes), s.Body["wait_limit_minutes"])
		s = h.post("/v1/sites", map[string]any{"name": "Porto", "timezone": "Europe/Lisbon", "wait_limit_minutes": 25})
		require.Equal(t, http.StatusCreated, s.Status, "%s", s.Raw)
		require.Equal(t, float64(25), s.Body["wait_limit_minutes"])
		site := s.Body["id"].(string)

		for _, bad := range []any{0, 241, -5, 2.5, "10", nil, true, 1e20} {
			r := h.post("/v1/sites", map[string]any{"name": "Bad", "timezone": "UTC", "wait_limit_minutes": bad})
			requireProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "body.wait_limit_minutes")
			require.Equal(t, "must be an integer from 1 to 240", r.Body["errors"].([]any)[0].(map[string]any)["message"], "%v", bad)
			requireProblem(t, h.patch("/v1/sites/"+site, map[string]any{"wait_limit_minutes": bad}),
				http.StatusUnprocessableEntity, "validation_failed", "body.wait_limit_minutes")
		}
		require.Equal(t, float64(25), h.get("/v1/sites/" + site).Body["wait_limit_minutes"], "a refused change changes nothing")

		tn := cloud.Tenant{OrgID: h.seed.Organisation.ID, Mode: cloud.ModeTest}
		_, head, err := h.svc.SiteChanges(t.Context(), cloud.EdgeSite(tn, site), 1<<62, 1)
		require.NoError(t, err)
		for _, n := range []int{1, 240} {
			u := h.patch("/v1/sites/"+site, map[string]any{"wait_limit_minutes": n})
			require.Equal(t, http.StatusOK, u.Status, "%s", u.Raw)
			require.Equal(t, float64(n), u.Body["wait_limit_minutes"])
			require.Equal(t, float64(n), h.get("/v1/sites/" + site).Body["wait_limit_minutes"])
			cs, _, err := h.svc.SiteChanges(t.Context(), cloud.EdgeSite(tn, site), head, 0)
			require.NoError(t, err)
			require.Len(t, cs, 1)
			require.NotNil(t, cs[0].Settings)
			require.Equal(t, n, cs[0].Settings.WaitLimitMinutes, "the edge gets the new limit")
			head = cs[0].Seq
		}
	})
}

func TestTeams_CreateAndUpdate(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		people := h.seed.Test.People
		r := h.post("/v1/teams", map[string]any{"name": "Platform", "site_id": h.seed.Test.Sites[0].ID, "lead_id": people[2],
			"member_ids": []string{people[2], people[1]}, "visitors_can_choose": false})
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		id := r.Body["id"].(string)
		var got []string
		for _, m := range r.Body["members"].([]any) {
			got = append(got, m.(map[string]any)["id"].(string))
		}
		require.Equal(t, []string{people[2], people[1]}, got, "members in the order given")
		require.Equal(t, false, r.Body["archived"])

		requireProblem(t, h.post("/v1/teams", map[string]any{"name": "No lead", "lead_id": people[3], "member_ids": []string{people[1]}}),
			http.StatusUnprocessableEntity, "validation_failed", "body.lead_id")
		requireProblem(t, h.post("/v1/teams", map[string]any{"name": "Dup", "member_ids": []string{people[1], people[1]}}),
			http.StatusUnprocessableEntity, "validation_failed", "body.member_ids[1]")
		requireProblem(t, h.patch("/v1/teams/"+id, map[string]any{"member_ids": []string{people[1]}}),
			http.StatusUnprocessableEntity, "validation_failed", "body.member_ids")

		u := h.patch("/v1/teams/"+id, map[string]any{"archived": true, "site_id": nil, "lead_id": nil, "member_ids": []string{people[4]}})
		require.Equal(t, http.StatusOK, u.Status, "%s", u.Raw)
		require.Equal(t, true, u.Body["archived"])
		require.Nil(t, u.Body["site_id"])
		require.Nil(t, u.Body["lead_id"])
		require.Len(t, u.Body["members"], 1)
		require.NotContains(t, idsOf(data(t, h.get("/v1/teams?limit=100"))), id, "archived teams are hidden by default")
		require.Contains(t, idsOf(data(t, h.get("/v1/teams?limit=100&include_archived=true"))), id)
	})
}

func TestQuery_UnknownParametersRefusedEverywhere(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		team := h.seed.Test.Teams[0]
		requireProblem(t, h.get("/v1/teams/"+team+"?pretty"), http.StatusUnprocessableEntity, "validation_failed", "query.pretty")
		requireProblem(t, h.get("/v1/organisation?expand=all"), http.StatusUnprocessableEntity, "validation_failed", "query.expand")
		requireProblem(t, h.patch("/v1/teams/"+team+"?force=true", map[string]any{"name": "X"}), http.StatusUnprocessableEntity, "validation_failed", "query.force")
		requireProblem(t, h.get("/v1/teams/"+team+"?a=%zz"), http.StatusBadRequest, "bad_request")
		require.Equal(t, http.StatusOK, h.get("/v1/teams/"+team).Status)
	})
}

func TestFilters_UnknownSiteIsRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(*testing.T) cloud.Store) {
		h := newHarness(t, open)
		other := h.seed.Live.Sites[0].ID // exists, but in live mode
		for _, path := range []string{"/v1/teams", "/v1/gates", "/v1/people"} {
			requireProblem(t, h.get(path+"?site_id="+other), http.StatusUnprocessableEntity, "validation_failed", "query.site_id")
			require.NotEmpty(t, data(t, h.get(path+"?site_id="+h.seed.Test.Sites[0].ID)), path)
		}
	})
}
