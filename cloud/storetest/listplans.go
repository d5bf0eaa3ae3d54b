package storetest

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-vms/svc/cloud"
)

// A ListCall is one list of the Store with some of its filters set, and the
// indexes that must serve it: RunListPlans explains the statement it runs.
// ListCalls is the table of every list and filter (issue 20).
type ListCall struct {
	Name string // the Store method, then the filters set
	// Indexes are the indexes of the listed table, any one of which must
	// appear in the plan.
	Indexes []string
	// Sorted says the index gives the list's order as well, so the plan
	// has no sort step and LIMIT stops the scan after one page. A range on
	// a column other than the order's (expected_from, starts_from) or a
	// filter the index matches in several places (several statuses, a
	// site or every site, the rows a name search finds) reads the matching
	// rows and sorts them.
	Sorted  bool
	Filter  any  // the filter, whose set fields CheckListCalls counts
	Unpaged bool // the list has no pages: one answer holds every row
	call    func(ctx context.Context, s cloud.Store, t cloud.Tenant, p cloud.Page) error
}

// Run runs the call's list on s for t, one page p.
func (c ListCall) Run(ctx context.Context, s cloud.Store, t cloud.Tenant, p cloud.Page) error {
	return c.call(ctx, s, t, p)
}

// method is the Store method the call runs.
func (c ListCall) method() string { return strings.SplitN(c.Name, "/", 2)[0] }

func lc[F any](method, filters string, f F, sorted bool, call func(ctx context.Context, s cloud.Store, t cloud.Tenant, f F, p cloud.Page) error, idx ...string) ListCall {
	name := method
	if filters != "" {
		name += "/" + filters
	}
	return ListCall{Name: name, Indexes: idx, Sorted: sorted, Filter: f,
		call: func(ctx context.Context, s cloud.Store, t cloud.Tenant, p cloud.Page) error {
			return call(ctx, s, t, f, p)
		}}
}

func unpaged(c ListCall) ListCall {
	c.Unpaged = true
	return c
}

func ignore[T any](_ T, _ bool, err error) error { return err }

func listVisits(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.VisitFilter, p cloud.Page) error {
	return ignore(s.ListVisits(ctx, t, f, p))
}
func listBookings(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.BookingFilter, p cloud.Page) error {
	return ignore(s.ListBookings(ctx, t, f, p))
}
func listEvents(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.EventFilter, p cloud.Page) error {
	return ignore(s.ListEvents(ctx, t, f, p))
}
func listAudit(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.AuditFilter, p cloud.Page) error {
	return ignore(s.ListAuditEvents(ctx, t, f, p))
}
func listPunches(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.PunchFilter, p cloud.Page) error {
	return ignore(s.ListPunches(ctx, t, f, p))
}
func listPeople(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.PersonFilter, p cloud.Page) error {
	return ignore(s.ListPeople(ctx, t, f, p))
}
func listTeams(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.TeamFilter, p cloud.Page) error {
	return ignore(s.ListTeams(ctx, t, f, p))
}
func listTimesheets(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.TimesheetFilter, p cloud.Page) error {
	return ignore(s.ListTimesheets(ctx, t, f, p))
}
func listPeriods(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.PeriodFilter, p cloud.Page) error {
	return ignore(s.ListTimesheetPeriods(ctx, t, f, p))
}
func listDeliveries(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.DeliveryFilter, p cloud.Page) error {
	return ignore(s.ListWebhookDeliveries(ctx, t, "we_plans", f, p))
}
func listAttempts(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.AttemptFilter, p cloud.Page) error {
	return ignore(s.ListWebhookAttempts(ctx, t, "we_plans", f, p))
}
func listMessages(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.MessageFilter, p cloud.Page) error {
	return ignore(s.ListMessages(ctx, t, f, p))
}
func listSites(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.SiteFilter, p cloud.Page) error {
	return ignore(s.ListSites(ctx, t, f, p))
}
func listGates(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.GateFilter, p cloud.Page) error {
	return ignore(s.ListGates(ctx, t, f, p))
}
func listVisitTypes(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.VisitTypeFilter, p cloud.Page) error {
	return ignore(s.ListVisitTypes(ctx, t, f, p))
}
func listBookingTypes(ctx context.Context, s cloud.Store, t cloud.Tenant, f cloud.BookingTypeFilter, p cloud.Page) error {
	return ignore(s.ListBookingTypes(ctx, t, f, p))
}
func listEndpoints(ctx context.Context, s cloud.Store, t cloud.Tenant, _ struct{}, p cloud.Page) error {
	return ignore(s.ListWebhookEndpoints(ctx, t, p))
}
func listEdges(ctx context.Context, s cloud.Store, t cloud.Tenant, siteID string, _ cloud.Page) error {
	_, err := s.ListEdges(ctx, t, siteID)
	return err
}

// ListCalls is every list the Store offers, with each of its filters alone
// and in the combinations the API makes (a plan's history, created_after,
// comes with any filter), each with the index that serves it
// (docs/decisions.md, "Indexed lists and name search (issue 20)").
// CheckListCalls holds it to cloud.Store: a list or a filter field
// added without a row here fails it. Index names that differ between the
// stores are both listed (SQLite's name first).
func ListCalls() []ListCall {
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	t0, t1 := &at, ptr(at.Add(24*time.Hour))
	day, day2 := ptr(cloud.DateOf(at)), ptr(cloud.DateOf(at.AddDate(0, 1, 0)))
	yes := ptr(true)
	const v, b = "ListVisits", "ListBookings"
	return []ListCall{
		lc(v, "", cloud.VisitFilter{}, true, listVisits, "visits_list"),
		lc(v, "status", cloud.VisitFilter{Status: []cloud.VisitStatus{cloud.VisitCheckedIn}}, true, listVisits, "visits_status_list"),
		lc(v, "status,created_after", cloud.VisitFilter{Status: []cloud.VisitStatus{cloud.VisitCheckedIn}, CreatedAfter: t0}, true, listVisits, "visits_status_list"),
		// Several statuses: the status index in several places, whose rows
		// are then sorted, or the list's index, tested row by row: the
		// planner's choice (docs/decisions.md).
		lc(v, "statuses", cloud.VisitFilter{Status: []cloud.VisitStatus{cloud.VisitExpected, cloud.VisitCheckedIn}}, false, listVisits,
			"visits_status_list", "visits_list"),
		lc(v, "type", cloud.VisitFilter{Type: "contractor"}, true, listVisits, "visits_type_list"),
		lc(v, "site", cloud.VisitFilter{SiteID: "site_plans"}, true, listVisits, "visits_site_list"),
		lc(v, "site,status", cloud.VisitFilter{SiteID: "site_plans", Status: []cloud.VisitStatus{cloud.VisitCheckedIn}}, true, listVisits, "visits_site_list", "visits_status_list"),
		lc(v, "host", cloud.VisitFilter{HostID: "per_plans"}, true, listVisits, "visit_hosts_person_list"),
		lc(v, "host,status", cloud.VisitFilter{HostID: "per_plans", Status: []cloud.VisitStatus{cloud.VisitCheckedIn}}, true, listVisits, "visit_hosts_person_list"),
		lc(v, "visitor", cloud.VisitFilter{VisitorID: "vis_plans"}, true, listVisits, "visits_visitor_list"),
		// A range on another column than the order's: the range's index,
		// whose rows are then sorted, or the list's index from the cursor,
		// tested row by row: the planner's choice (docs/decisions.md).
		lc(v, "expected_from,expected_before", cloud.VisitFilter{ExpectedFrom: t0, ExpectedBefore: t1}, false, listVisits, "visits_expected", "visits_list"),
		lc(v, "created_after", cloud.VisitFilter{CreatedAfter: t0}, true, listVisits, "visits_list"),
		lc(v, "waiting_with", cloud.VisitFilter{WaitingWith: "reception"}, true, listVisits, "visits_waiting_list"),

		lc(b, "", cloud.BookingFilter{Now: at}, true, listBookings, "bookings_list"),
		lc(b, "status", cloud.BookingFilter{Status: []cloud.BookingStatus{cloud.BookingConfirmed}, Now: at}, true, listBookings, "bookings_status_list"),
		lc(b, "status=pending", cloud.BookingFilter{Status: []cloud.BookingStatus{cloud.BookingPending}, Now: at}, true, listBookings, "bookings_status_list"),
		// expired is stored expired, or pending past confirm_by: two statuses.
		lc(b, "status=expired", cloud.BookingFilter{Status: []cloud.BookingStatus{cloud.BookingExpired}, Now: at}, false, listBookings,
			"bookings_status_list", "bookings_list"),
		lc(b, "type", cloud.BookingFilter{TypeID: "bt_plans", Now: at}, true, listBookings, "bookings_type_list"),
		lc(b, "site", cloud.BookingFilter{SiteID: "site_plans", Now: at}, true, listBookings, "bookings_site_list"),
		lc(b, "visitor", cloud.BookingFilter{VisitorID: "vis_plans", Now: at}, true, listBookings, "bookings_visitor_list"),
		lc(b, "starts_from,starts_before", cloud.BookingFilter{StartsFrom: t0, StartsBefore: t1, Now: at}, false, listBookings, "bookings_starts", "bookings_slot", "bookings_list"),
		lc(b, "created_after", cloud.BookingFilter{CreatedAfter: t0, Now: at}, true, listBookings, "bookings_list"),

		lc("ListEvents", "", cloud.EventFilter{}, true, listEvents, "events_list"),
		lc("ListEvents", "type", cloud.EventFilter{Type: "visit.created"}, true, listEvents, "events_type_list"),
		lc("ListEvents", "type,created_gte,created_lt", cloud.EventFilter{Type: "visit.created", CreatedGTE: t0, CreatedLT: t1}, true, listEvents, "events_type_list"),
		lc("ListEvents", "created_gte,created_lt", cloud.EventFilter{CreatedGTE: t0, CreatedLT: t1}, true, listEvents, "events_list"),
		lc("ListEvents", "created_after", cloud.EventFilter{CreatedAfter: t0}, true, listEvents, "events_list"),
		lc("ListEvents", "object", cloud.EventFilter{ObjectID: "vst_plans"}, true, listEvents, "events_object_list"),

		lc("ListAuditEvents", "", cloud.AuditFilter{}, true, listAudit, "audit_events_list"),
		lc("ListAuditEvents", "action", cloud.AuditFilter{Action: "visit.create"}, true, listAudit, "audit_events_action_list"),
		lc("ListAuditEvents", "object", cloud.AuditFilter{ObjectID: "vst_plans"}, true, listAudit, "audit_events_object_list"),
		lc("ListAuditEvents", "action,created_after", cloud.AuditFilter{Action: "visit.create", CreatedAfter: t0}, true, listAudit, "audit_events_action_list"),

		lc("ListPunches", "", cloud.PunchFilter{}, true, listPunches, "attendance_events_list"),
		lc("ListPunches", "person", cloud.PunchFilter{PersonID: "per_plans"}, true, listPunches, "attendance_events_person_list"),
		lc("ListPunches", "site", cloud.PunchFilter{SiteID: "site_plans"}, true, listPunches, "attendance_events_site_list"),
		lc("ListPunches", "from,to", cloud.PunchFilter{From: t0, To: t1}, true, listPunches, "attendance_events_list"),
		lc("ListPunches", "person,from,to", cloud.PunchFilter{PersonID: "per_plans", From: t0, To: t1}, true, listPunches, "attendance_events_person_list"),

		lc("ListPeople", "", cloud.PersonFilter{}, true, listPeople, "people_list"),
		lc("ListPeople", "q", cloud.PersonFilter{Query: "lovelace"}, false, listPeople, "people_search", "people_name_trgm"),
		// A q shorter than a trigram is matched on the rows in list order.
		lc("ListPeople", "q=short", cloud.PersonFilter{Query: "lo"}, true, listPeople, "people_list"),
		lc("ListPeople", "site", cloud.PersonFilter{SiteID: "site_plans"}, true, listPeople, "people_site_list"),
		lc("ListPeople", "email", cloud.PersonFilter{Email: "ada@example.com"}, false, listPeople, "people_email"),
		lc("ListPeople", "active", cloud.PersonFilter{Active: yes}, true, listPeople, "people_active_list"),

		lc("ListTeams", "", cloud.TeamFilter{}, true, listTeams, "teams_list"),
		lc("ListTeams", "q", cloud.TeamFilter{Query: "reception"}, false, listTeams, "teams_search", "teams_name_trgm"),
		// A site's teams and every site's: like several statuses.
		lc("ListTeams", "site", cloud.TeamFilter{SiteID: "site_plans"}, false, listTeams, "teams_site_list", "teams_list"),
		// visitors_can_choose and include_archived keep most teams: they
		// are tested on the rows in list order.
		lc("ListTeams", "visitors_can_choose,include_archived", cloud.TeamFilter{VisitorsCanChoose: yes, IncludeArchived: true}, true, listTeams, "teams_list"),

		lc("ListTimesheets", "", cloud.TimesheetFilter{}, true, listTimesheets, "timesheets_list"),
		lc("ListTimesheets", "period", cloud.TimesheetFilter{PeriodID: "tsp_plans"}, true, listTimesheets, "timesheets_period_list"),
		lc("ListTimesheets", "person", cloud.TimesheetFilter{PersonID: "per_plans"}, true, listTimesheets, "timesheets_person_list"),
		lc("ListTimesheets", "status", cloud.TimesheetFilter{Status: cloud.TimesheetToApprove}, true, listTimesheets, "timesheets_status_list"),
		lc("ListTimesheets", "period,status", cloud.TimesheetFilter{PeriodID: "tsp_plans", Status: cloud.TimesheetToApprove}, true, listTimesheets, "timesheets_period_list", "timesheets_status_list"),
		lc("ListTimesheetPeriods", "from,to", cloud.PeriodFilter{From: day, To: day2}, true, listPeriods,
			"sqlite_autoindex_timesheet_periods_2", "timesheet_periods_org_id_mode_starts_on_key"),

		lc("ListWebhookDeliveries", "", cloud.DeliveryFilter{}, true, listDeliveries, "webhook_deliveries_list"),
		lc("ListWebhookDeliveries", "status", cloud.DeliveryFilter{Status: cloud.DeliveryFailed}, true, listDeliveries, "webhook_deliveries_status_list"),
		lc("ListWebhookDeliveries", "event", cloud.DeliveryFilter{EventID: "evt_plans"}, false, listDeliveries,
			"sqlite_autoindex_webhook_deliveries_1", "webhook_deliveries_pkey"),
		lc("ListWebhookAttempts", "", cloud.AttemptFilter{}, true, listAttempts, "webhook_attempts_list"),
		lc("ListWebhookAttempts", "event", cloud.AttemptFilter{EventID: "evt_plans"}, true, listAttempts, "webhook_attempts_event"),

		lc("ListMessages", "visit,created_after", cloud.MessageFilter{VisitID: "vst_plans", CreatedAfter: t0}, true, listMessages, "messages_visit_list"),
		lc("ListSites", "", cloud.SiteFilter{}, true, listSites, "sites_list"),
		lc("ListGates", "site", cloud.GateFilter{SiteID: "site_plans"}, true, listGates, "gates_site_list"),
		lc("ListVisitTypes", "public", cloud.VisitTypeFilter{Public: true}, true, listVisitTypes, "visit_types_list"),
		lc("ListBookingTypes", "site,public,include_archived", cloud.BookingTypeFilter{SiteID: "site_plans", Public: true, IncludeArchived: true}, true,
			listBookingTypes, "booking_types_site_list"),
		lc("ListWebhookEndpoints", "", struct{}{}, true, listEndpoints, "webhook_endpoints_list"),
		// An organisation's appliances, all of them: a handful.
		unpaged(lc("ListEdges", "site", "site_plans", true, listEdges, "edges_site")),
	}
}

// listsNotCalled are the Store's List methods ListCalls leaves out, and why.
var listsNotCalled = map[string]string{
	"ListReleases": "every organisation's releases together: one row per signed image, a few a month",
}

// CheckListCalls fails t unless ListCalls has a row for every List method
// of cloud.Store and, for each, sets every field of its filter in some row.
func CheckListCalls(t *testing.T) {
	calls := ListCalls()
	st := reflect.TypeFor[cloud.Store]()
	for i := range st.NumMethod() {
		m := st.Method(i)
		if !strings.HasPrefix(m.Name, "List") {
			continue
		}
		if _, ok := listsNotCalled[m.Name]; ok {
			continue
		}
		var set []string
		found := false
		var filter reflect.Type
		for _, c := range calls {
			if c.method() != m.Name {
				continue
			}
			found = true
			fv := reflect.ValueOf(c.Filter)
			filter = fv.Type()
			if fv.Kind() != reflect.Struct {
				continue
			}
			for j := range fv.NumField() {
				if !fv.Field(j).IsZero() {
					set = append(set, filter.Field(j).Name)
				}
			}
		}
		if !found {
			t.Errorf("ListCalls has no row for cloud.Store.%s: add its filters and their indexes", m.Name)
			continue
		}
		// The filter argument of the method must be the one the rows set.
		for j := range m.Type.NumIn() {
			in := m.Type.In(j)
			if strings.HasSuffix(in.Name(), "Filter") && in != filter {
				t.Errorf("ListCalls rows of %s set a %v, not its %v", m.Name, filter, in)
			}
		}
		if filter == nil || filter.Kind() != reflect.Struct {
			continue
		}
		for j := range filter.NumField() {
			name := filter.Field(j).Name
			if name == "Now" { // the clock of the status filter, not a filter
				continue
			}
			if !slices.Contains(set, name) {
				t.Errorf("no ListCalls row of %s sets %s.%s: add one with the index that serves it", m.Name, filter.Name(), name)
			}
		}
	}
}

// A Plan is what a store's planner chose for one list statement.
type Plan struct {
	Text      string   // the plan as the database printed it, for failures
	Indexes   []string // every index the plan reads
	FullScans []string // every table the plan reads whole, without an index
	Sorts     bool     // the plan sorts rows (rather than reading them in order)
	// KeysetRange says the plan reads the index from the page's cursor
	// (a range on the order's columns), not from its start.
	KeysetRange bool
}

// Explainer runs a list call (run) on the store under test and returns the
// plan of the first statement it ran. With sorted, a store may tell its
// planner to avoid a sort where it can (PostgreSQL's enable_sort), so that
// an index that gives the order is chosen on an empty table.
type Explainer func(t *testing.T, sorted bool, run func() error) Plan

// RunListPlans explains every ListCall, first page and a later page, on s
// and fails where the plan reads a table whole, reads none of the call's
// indexes, or sorts a list whose index gives its order.
func RunListPlans(t *testing.T, s cloud.Store, explain Explainer) {
	ctx := context.Background()
	tn := cloud.Tenant{OrgID: "org_plans", Mode: cloud.ModeLive}
	after := &cloud.Position{CreatedAt: time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC), ID: "zzz"}
	for _, c := range ListCalls() {
		for _, p := range []struct {
			name string
			page cloud.Page
		}{{"first", cloud.Page{Limit: 25}}, {"after", cloud.Page{Limit: 25, After: after}}} {
			if c.Unpaged && p.page.After != nil {
				continue
			}
			t.Run(c.Name+"/"+p.name, func(t *testing.T) {
				plan := explain(t, c.Sorted, func() error { return c.Run(ctx, s, tn, p.page) })
				if len(plan.FullScans) > 0 {
					t.Errorf("reads %v whole, without an index:\n%s", plan.FullScans, plan.Text)
				}
				if !slices.ContainsFunc(c.Indexes, func(ix string) bool { return slices.Contains(plan.Indexes, ix) }) {
					t.Errorf("reads none of %v (it reads %v):\n%s", c.Indexes, plan.Indexes, plan.Text)
				}
				if c.Sorted && plan.Sorts {
					t.Errorf("sorts the rows, where %v gives their order:\n%s", c.Indexes, plan.Text)
				}
				if c.Sorted && p.page.After != nil && !plan.KeysetRange {
					t.Errorf("reads the index from its start, not from the cursor:\n%s", plan.Text)
				}
			})
		}
	}
}
