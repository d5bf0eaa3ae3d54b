package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/storetest"
)

// TestListCalls checks the table of lists and filters covers the Store.
func TestListCalls(t *testing.T) { storetest.CheckListCalls(t) }

// TestListPlans checks every list, with each filter, is served by its index
// (storetest.ListCalls): EXPLAIN QUERY PLAN must name the index, read no
// table whole (SCAN) and, where the index gives the order, use no temporary
// B-tree for ORDER BY. The tables are empty and unanalysed: SQLite plans
// on the schema alone.
func TestListPlans(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "cloud.db"), kektest.Ring())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	storetest.RunListPlans(t, s, func(t *testing.T, _ bool, run func() error) storetest.Plan {
		s.r.forget()
		if err := run(); err != nil {
			t.Fatal(err)
		}
		var plan storetest.Plan
		for _, q := range s.r.prepared() {
			s.explain(t, q, &plan)
		}
		if os.Getenv("LISTPLANS_SHOW") != "" {
			t.Log(plan.Text)
		}
		if plan.Text == "" {
			t.Fatal("the call ran no statement")
		}
		return plan
	})
}

var (
	planIndex  = regexp.MustCompile(`USING (?:COVERING )?INDEX (\S+)`)
	planScan   = regexp.MustCompile(`^SCAN (\S+)`)
	planSearch = regexp.MustCompile(`^SCAN (\S+) VIRTUAL TABLE INDEX \d+:M`)
	// a range on the order's first column, alone or in a row value
	planKeyset = regexp.MustCompile(`\(?(created_at|occurred_at|starts_on)(,\w+\))?<`)
)

// explain adds the plan of query to plan.
func (s *Store) explain(t *testing.T, query string, plan *storetest.Plan) {
	t.Helper()
	args := make([]any, strings.Count(query, "?"))
	rows, err := s.r.DB.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("explain %s: %v", query, err)
	}
	defer rows.Close()
	plan.Text += query + "\n"
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan.Text += "  " + detail + "\n"
		if m := planIndex.FindStringSubmatch(detail); m != nil && !slices.Contains(plan.Indexes, m[1]) {
			plan.Indexes = append(plan.Indexes, m[1])
		}
		// SCAN t reads t whole (SCAN t USING INDEX i reads all of i); a
		// virtual table (json_each, an FTS index) is searched by its own
		// means, and a subquery's rows are its own plan's.
		if m := planScan.FindStringSubmatch(detail); m != nil && !strings.Contains(detail, "VIRTUAL TABLE") && !strings.HasPrefix(m[1], "(") {
			plan.FullScans = append(plan.FullScans, m[1])
		}
		if m := planSearch.FindStringSubmatch(detail); m != nil && !slices.Contains(plan.Indexes, m[1]) {
			plan.Indexes = append(plan.Indexes, m[1]) // an FTS5 table's MATCH
		}
		if planKeyset.MatchString(detail) {
			plan.KeysetRange = true
		}
		if strings.HasPrefix(detail, "USE TEMP B-TREE FOR") && strings.Contains(detail, "ORDER BY") {
			plan.Sorts = true
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// forget closes and drops the prepared read statements, so that prepared
// then lists what one call ran.
func (r *readDB) forget() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for q, st := range r.stmts {
		st.Close()
		delete(r.stmts, q)
	}
}

// prepared is the read statements prepared since forget.
func (r *readDB) prepared() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for q := range r.stmts {
		out = append(out, q)
	}
	slices.Sort(out)
	return out
}

// TestGetVisitsPlan checks the batch of facts' visits is read by the
// visits' primary key, one search per ID, rather than through the index
// of the tenant (which SQLite, on the schema alone, prefers to a list of
// unknown length): that was 64 ms a batch of about 100 at 100,000 visits.
func TestGetVisitsPlan(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "cloud.db"), kektest.Ring())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var plan storetest.Plan
	s.explain(t, qGetVisits, &plan)
	if !slices.Equal(plan.Indexes, []string{"sqlite_autoindex_visits_1", "sqlite_autoindex_visitors_1"}) {
		t.Errorf("the visits are read through %v, not by their primary key:\n%s", plan.Indexes, plan.Text)
	}
}
