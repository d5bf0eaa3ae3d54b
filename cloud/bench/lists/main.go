// Command lists is the load program of lists at scale (issue 20): it fills
// a store with rows of each listed kind (visits with their hosts, bookings,
// events, audit events, attendance events, people, teams, timesheets,
// webhook deliveries and attempts) by direct bulk inserts, then asks every
// list, with each of its filters, through the real HTTP stack (httpapi
// served in this process, over TCP on 127.0.0.1) and prints p50 and p99 of
// -requests sequential requests per list and filter. It does so at each
// -sizes entry (rows of each kind; people at the matching -people entry, so
// that q is measured at 100,000 people), filling the same database up from
// one size to the next.
//
// Each filter matches a share of the rows that does not change with the
// table (a rare value: 1 row in 200; a common one: most rows), or a fixed
// window (one day of expected_at or created_at, 1,440 rows), so a list
// whose cost grows with the table shows as p99 growing from one size to
// the next. Beside each size's figures, the bare handler's
// (cloud/bench/baseline's: an echo route that writes a fixed body) from
// the same run, asked the same way.
//
// Stores: SQLite (a file in a temporary directory) always, PostgreSQL when
// -pg or SVC_TEST_POSTGRES_URL gives a URL (a fresh schema, dropped at the
// end; VACUUM ANALYZE after each fill, as autovacuum would); -stores
// narrows them. The program needs nothing of the store's own code beyond
// cloud.Store, so it runs unchanged on an older commit (the "before"
// figures of docs/performance.md): the fill inserts only the columns the
// tables have.
//
// Lines starting RESULT are the figures; the rest is progress on stderr.
//
//	SVC_TEST_POSTGRES_URL=postgres://... go run ./cloud/bench/lists
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	_ "modernc.org/sqlite" // the fill's own connection to the store's file

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/bench/benchutil"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/cloud/storedoc"
	"github.com/svc-vms/svc/shared/ids"
)

type options struct {
	stores   []string
	pgURL    string
	sizes    []int
	people   []int
	requests int
	only     string
	keep     bool
}

func main() {
	var o options
	var stores, sizes, people string
	flag.StringVar(&stores, "stores", "sqlite,postgres", "stores to measure; postgres only when -pg or SVC_TEST_POSTGRES_URL is set")
	flag.StringVar(&o.pgURL, "pg", os.Getenv("SVC_TEST_POSTGRES_URL"), "PostgreSQL URL (a fresh schema is made in it and dropped)")
	flag.StringVar(&sizes, "sizes", "10000,200000", "rows of each kind at each measure")
	flag.StringVar(&people, "people", "10000,100000", "people at each measure (one per -sizes entry)")
	flag.IntVar(&o.requests, "requests", 200, "measured requests per list and filter at each size (after 10 unmeasured)")
	flag.StringVar(&o.only, "only", "", "measure only the lists whose name holds this")
	flag.BoolVar(&o.keep, "keep", false, "keep the database (the SQLite file, the PostgreSQL schema) and print where it is")
	flag.Parse()
	o.stores = strings.Split(stores, ",")
	for _, v := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			fmt.Fprintln(os.Stderr, "lists: -sizes: whole numbers of at least 1000")
			os.Exit(2)
		}
		o.sizes = append(o.sizes, n)
	}
	for _, v := range strings.Split(people, ",") {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			fmt.Fprintln(os.Stderr, "lists: -people: whole numbers of at least 1000")
			os.Exit(2)
		}
		o.people = append(o.people, n)
	}
	if len(o.people) != len(o.sizes) || o.requests < 10 || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx := context.Background()
	for _, st := range o.stores {
		if st == "postgres" && o.pgURL == "" {
			progress("postgres: no URL (-pg or SVC_TEST_POSTGRES_URL): skipped")
			continue
		}
		if err := run(ctx, o, st); err != nil {
			fmt.Fprintf(os.Stderr, "lists: %s: %v\n", st, err)
			os.Exit(1)
		}
	}
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

// env is one store under test, filled through inserter.
type env struct {
	o      options
	store  string
	svc    *cloud.Service
	t      cloud.Tenant
	key    string
	ins    inserter
	closer []func()

	sites     []string // the seeded sites of the test mode
	endpoint  string
	people    []string // IDs, in the order filled
	events    []string
	periods   []string
	filled    map[string]int
	base      time.Time // the first row's created_at; row i is i minutes later
	analyzeFn func(context.Context) error
}

func run(ctx context.Context, o options, store string) (err error) {
	e := &env{o: o, store: store, filled: map[string]int{}, base: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	defer func() {
		for i := len(e.closer) - 1; i >= 0; i-- {
			e.closer[i]()
		}
	}()
	var st cloud.Store
	switch store {
	case "sqlite":
		dir, err := os.MkdirTemp("", "bench-lists-")
		if err != nil {
			return err
		}
		e.closer = append(e.closer, func() {
			if o.keep {
				progress("kept %s", dir)
				return
			}
			os.RemoveAll(dir)
		})
		path := filepath.Join(dir, "cloud.db")
		s, err := sqlite.Open(ctx, path, kektest.Ring())
		if err != nil {
			return err
		}
		e.closer = append(e.closer, func() { s.Close() })
		st = s
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(0)")
		if err != nil {
			return err
		}
		e.closer = append(e.closer, func() { db.Close() })
		e.ins = &sqliteInserter{db: db, cols: map[string][]string{}}
		e.analyzeFn = func(context.Context) error { return nil }
	case "postgres":
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		schema := "bench_lists_" + hex.EncodeToString(rnd[:])
		conn, err := pgx.Connect(ctx, o.pgURL)
		if err != nil {
			return err
		}
		e.closer = append(e.closer, func() { conn.Close(context.Background()) })
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			return err
		}
		e.closer = append(e.closer, func() {
			if o.keep {
				progress("kept schema %s", schema)
				return
			}
			if _, err := conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
				progress("drop schema %s: %v (drop it by hand)", schema, err)
			}
		})
		if _, err := conn.Exec(ctx, "SET search_path = "+schema); err != nil {
			return err
		}
		cfg, err := pgxpool.ParseConfig(o.pgURL)
		if err != nil {
			return err
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = schema
		s, err := postgres.OpenConfig(ctx, cfg, kektest.Ring())
		if err != nil {
			return err
		}
		e.closer = append(e.closer, func() { s.Close() })
		st = s
		e.ins = &pgInserter{conn: conn, schema: schema, cols: map[string][]string{}}
		e.analyzeFn = func(ctx context.Context) error { return benchutil.AnalyzeSchema(ctx, conn, schema, true) }
	default:
		return fmt.Errorf("unknown store %q", store)
	}
	e.svc = cloud.NewService(st, time.Now)
	e.svc.SetEventRenderer(httpapi.RenderEvent)
	res, err := e.svc.Seed(ctx, "Lists bench", cloud.PlanEnterprise)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	e.key = res.Keys.SecretTest
	p, err := e.svc.Authenticate(ctx, e.key)
	if err != nil {
		return err
	}
	e.t = p.Key.Tenant
	for _, s := range res.Test.Sites {
		e.sites = append(e.sites, s.ID)
	}
	u, desc := "https://hooks.example.com/lists", "lists bench"
	ep, err := e.svc.CreateWebhookEndpoint(ctx, cloud.ActorOf(p), cloud.WebhookInput{URL: &u, Description: &desc, EventTypes: []string{"*"}})
	if err != nil {
		return fmt.Errorf("create endpoint: %w", err)
	}
	e.endpoint = ep.ID

	api, err := benchutil.API(ctx, e.svc)
	if err != nil {
		return err
	}
	defer api.Close()
	bare := httptest.NewServer(baseline())
	defer bare.Close()
	client := &http.Client{Timeout: time.Minute}
	defer client.CloseIdleConnections()

	for i, size := range o.sizes {
		start := time.Now()
		if err := e.fill(ctx, size, o.people[i]); err != nil {
			return fmt.Errorf("fill: %w", err)
		}
		if err := e.analyzeFn(ctx); err != nil {
			return fmt.Errorf("analyze: %w", err)
		}
		progress("%s: filled to %d rows (%d people) in %.1f s", store, size, o.people[i], time.Since(start).Seconds())
		fmt.Printf("\n%s, %d rows of each kind, %d people; load %s\n", store, size, o.people[i], benchutil.LoadAvg())
		b50, b99, _, err := e.measure(ctx, client, bare.URL+"/v1/teams", "")
		if err != nil {
			return fmt.Errorf("baseline: %w", err)
		}
		fmt.Printf("RESULT %s rows=%d list=baseline filter=bare-handler p50=%.2f p99=%.2f\n", store, size, b50, b99)
		for _, c := range e.cells(size) {
			if o.only != "" && !strings.Contains(c.list, o.only) {
				continue
			}
			rows := size
			if c.list == "people" {
				rows = o.people[i]
			}
			p50, p99, n, err := e.measure(ctx, client, api.URL+c.path, e.key)
			if err != nil {
				return fmt.Errorf("%s %s: %w", c.list, c.filter, err)
			}
			fmt.Printf("RESULT %s rows=%d list=%s filter=%s p50=%.2f p99=%.2f page=%d base_p50=%.2f base_p99=%.2f\n",
				store, rows, c.list, c.filter, p50, p99, n, b50, b99)
		}
	}
	return nil
}

// baseline is cloud/bench/baseline's handler: echo writing a fixed body.
func baseline() http.Handler {
	body := []byte(`{"data":[],"next_cursor":null,"has_more":false}`)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/v1/teams", func(c echo.Context) error { return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body) })
	return e
}

// measure asks u o.requests times, one at a time (after 10 unmeasured),
// and returns p50 and p99 in milliseconds and the rows of the last page.
func (e *env) measure(ctx context.Context, client *http.Client, u, key string) (float64, float64, int, error) {
	lat := make([]time.Duration, 0, e.o.requests)
	n := 0
	for i := range e.o.requests + 10 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, 0, 0, err
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, 0, 0, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if err != nil {
			return 0, 0, 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, 0, 0, fmt.Errorf("status %d: %s", resp.StatusCode, b)
		}
		if i == 0 {
			var page struct{ Data []json.RawMessage }
			if err := json.Unmarshal(b, &page); err != nil {
				return 0, 0, 0, err
			}
			n = len(page.Data)
		}
		if i >= 10 {
			lat = append(lat, d)
		}
	}
	slices.Sort(lat)
	return benchutil.MS(benchutil.Pct(lat, 50)), benchutil.MS(benchutil.Pct(lat, 99)), n, nil
}

type cell struct{ list, filter, path string }

// cells are the lists and filters measured at size rows. A rare value
// matches 1 row in 200 (1 in 10,000 for a name), a common one most rows,
// a window one day of rows a minute apart (1,440).
func (e *env) cells(size int) []cell {
	day := func(i int) (string, string) {
		from := e.at(i)
		return from.Format(time.RFC3339), from.Add(24 * time.Hour).Format(time.RFC3339)
	}
	mid := size / 2
	ef, eb := day(mid)
	q := func(kv ...string) string {
		v := url.Values{"limit": {"25"}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return "?" + v.Encode()
	}
	wh := "/v1/webhook-endpoints/" + e.endpoint
	return []cell{
		{"visits", "none", "/v1/visits" + q()},
		{"visits", "status=checked_in(rare)", "/v1/visits" + q("status", "checked_in")},
		{"visits", "status=checked_out(common)", "/v1/visits" + q("status", "checked_out")},
		{"visits", "status=expected,checked_in", "/v1/visits" + q("status", "expected,checked_in")},
		{"visits", "type=contractor(rare)", "/v1/visits" + q("type", "contractor")},
		{"visits", "site_id(1/10)", "/v1/visits" + q("site_id", e.sites[0])},
		{"visits", "host_id(rare)", "/v1/visits" + q("host_id", e.people[0])},
		{"visits", "expected_from,before(1 day)", "/v1/visits" + q("expected_from", ef, "expected_before", eb)},
		{"visits", "waiting_with=reception(rare)", "/v1/visits" + q("waiting_with", "reception")},
		{"bookings", "none", "/v1/bookings" + q()},
		{"bookings", "status=pending(rare)", "/v1/bookings" + q("status", "pending")},
		{"bookings", "site_id(1/10)", "/v1/bookings" + q("site_id", e.sites[0])},
		{"events", "none", "/v1/events" + q()},
		{"events", "type=visitor.erased(rare)", "/v1/events" + q("type", cloud.EventVisitorErased)},
		{"events", "created_from,before(1 day)", "/v1/events" + q("created_from", ef, "created_before", eb)},
		{"audit-events", "none", "/v1/audit-events" + q()},
		{"audit-events", "action(rare)", "/v1/audit-events" + q("action", "visitor.erase")},
		{"attendance-events", "none", "/v1/attendance-events" + q()},
		{"attendance-events", "person_id(1/500)", "/v1/attendance-events" + q("person_id", e.people[0])},
		{"attendance-events", "site_id(1/10)", "/v1/attendance-events" + q("site_id", e.sites[0])},
		{"people", "none", "/v1/people" + q()},
		{"people", "site_id(1/10)", "/v1/people" + q("site_id", e.sites[0])},
		{"people", "q=lovelace(rare)", "/v1/people" + q("q", "lovelace")},
		{"people", "q=son(1/8)", "/v1/people" + q("q", "son")},
		{"people", "q=ad(short)", "/v1/people" + q("q", "ad")},
		{"teams", "none", "/v1/teams" + q()},
		{"teams", "q=orbit(rare)", "/v1/teams" + q("q", "orbit")},
		{"teams", "site_id(1/10)", "/v1/teams" + q("site_id", e.sites[0])},
		{"timesheets", "none", "/v1/timesheets" + q()},
		{"timesheets", "status=to_approve(rare)", "/v1/timesheets" + q("status", "to_approve")},
		{"timesheets", "person_id(1/500)", "/v1/timesheets" + q("person_id", e.people[0])},
		{"timesheets", "period_id", "/v1/timesheets" + q("period_id", e.periods[0])},
		{"webhook-deliveries", "none", wh + "/deliveries" + q()},
		{"webhook-deliveries", "status=failed(rare)", wh + "/deliveries" + q("status", "failed")},
		{"webhook-attempts", "none", wh + "/attempts" + q()},
	}
}

// at is the creation time of row i of a kind.
func (e *env) at(i int) time.Time { return e.base.Add(time.Duration(i) * time.Minute) }

var (
	firstNames = []string{"ada", "alan", "grace", "edsger", "barbara", "donald", "margaret", "ken", "dennis", "frances",
		"john", "radia", "tim", "katherine", "claude", "hedy", "linus", "shafi", "niklaus", "adele"}
	lastNames = []string{"turing", "hopper", "dijkstra", "liskov", "knuth", "hamilton", "thompson", "ritchie",
		"allen", "mccarthy", "perlman", "johnson", "shannon", "lamarr", "torvalds", "goldwasser", "wirth", "goldberg",
		"lamport", "wilson", "stroustrup", "jones", "rossum", "conway", "pike", "clarke", "hoare", "keller", "berners",
		"spark", "backus", "cerf", "kahn", "engelbart", "kay", "sutherland", "milner", "church", "curry", "hamming"}
	teamWords = []string{"reception", "facilities", "security", "finance", "legal", "research", "support", "sales",
		"marketing", "logistics", "catering", "maintenance"}
)

// fill inserts rows of every kind up to size (people up to people).
func (e *env) fill(ctx context.Context, size, people int) error {
	kinds := []struct {
		name string
		to   int
		fn   func(i int) []row
	}{
		{"people", people, e.personRows},
		{"teams", size, e.teamRows},
		{"events", size, e.eventRows},
		{"visits", size, e.visitRows},
		{"bookings", size, e.bookingRows},
		{"audit", size, e.auditRows},
		{"attendance", size, e.punchRows},
		{"timesheets", size, e.timesheetRows},
		{"webhooks", size, e.webhookRows},
	}
	for _, k := range kinds {
		from := e.filled[k.name]
		if from >= k.to {
			continue
		}
		start := time.Now()
		batch := map[string][]row{}
		var order []string
		flush := func() error {
			for _, table := range order {
				if err := e.ins.insert(ctx, table, batch[table]); err != nil {
					return fmt.Errorf("%s: %w", table, err)
				}
				batch[table] = batch[table][:0]
			}
			return nil
		}
		for i := from; i < k.to; i++ {
			for _, r := range k.fn(i) {
				if _, ok := batch[r.table]; !ok {
					order = append(order, r.table)
				}
				batch[r.table] = append(batch[r.table], r)
			}
			if (i+1)%5000 == 0 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		e.filled[k.name] = k.to
		progress("  %s: %d to %d in %.1f s", k.name, from, k.to, time.Since(start).Seconds())
	}
	return nil
}

// row is one row of table, by column name.
type row struct {
	table string
	cols  map[string]any
}

func (e *env) tenantCols(m map[string]any) map[string]any {
	m["org_id"], m["mode"] = e.t.OrgID, string(e.t.Mode)
	return m
}

func (e *env) site(i int) string {
	if i%10 == 0 {
		return e.sites[0]
	}
	return e.sites[1+i%(len(e.sites)-1)]
}

func (e *env) personRows(i int) []row {
	id := ids.New(ids.Person)
	e.people = append(e.people, id)
	name := firstNames[i%len(firstNames)] + " " + lastNames[(i/len(firstNames))%len(lastNames)]
	if i%10000 == 7 {
		name = "ada lovelace"
	}
	email := strings.ReplaceAll(name, " ", ".") + strconv.Itoa(i) + "@example.com"
	at := e.at(i)
	return []row{{"people", e.tenantCols(map[string]any{"id": id, "name": name, "name_search": name, "email": email,
		"email_fold": email, "site_id": e.site(i), "active": true, "created_at": at, "updated_at": at})}}
}

func (e *env) teamRows(i int) []row {
	name := teamWords[i%len(teamWords)] + " " + strconv.Itoa(i)
	if i%10000 == 7 {
		name = "orbit " + strconv.Itoa(i)
	}
	at := e.at(i)
	var site any
	if i%20 != 0 { // one team in 20 is at every site
		site = e.site(i)
	}
	return []row{{"teams", e.tenantCols(map[string]any{"id": ids.New(ids.Team), "name": name, "name_search": name, "site_id": site,
		"visitors_can_choose": true, "archived": false, "created_at": at, "updated_at": at})}}
}

func (e *env) eventRows(i int) []row {
	id := ids.New(ids.Event)
	e.events = append(e.events, id)
	typ := cloud.EventVisitCreated
	switch {
	case i%200 == 0:
		typ = cloud.EventVisitorErased
	case i%2 == 1:
		typ = cloud.EventVisitCheckedIn
	}
	return []row{{"events", e.tenantCols(map[string]any{"id": id, "type": typ, "object_type": "visit",
		"object_id": ids.New(ids.Visit), "data": `{"id":"x"}`, "created_at": e.at(i)})}}
}

func (e *env) visitRows(i int) []row {
	at := e.at(i)
	v := cloud.Visit{ID: ids.New(ids.Visit), Tenant: e.t, Status: cloud.VisitCheckedOut, Type: "meeting", SiteID: e.site(i),
		HostID: e.people[i%200], CreatedAt: at, UpdatedAt: at, ExpectedAt: ptr(at.Add(time.Hour)), Receiver: cloud.Receiver{Kind: cloud.Reception}}
	switch {
	case i%200 == 0:
		v.Status = cloud.VisitCheckedIn
	case i%200 == 1:
		v.Status = cloud.VisitExpected
	}
	if i%200 == 2 {
		v.Type = "contractor"
	}
	if i%200 == 3 { // nobody has taken it: it waits with reception
		v.HostID = ""
	}
	doc, err := storedoc.EncodeVisit(v)
	if err != nil {
		panic(err)
	}
	var host any
	if v.HostID != "" {
		host = v.HostID
	}
	rows := []row{{"visits", e.tenantCols(map[string]any{"id": v.ID, "status": string(v.Status), "type": v.Type, "site_id": v.SiteID,
		"host_id": host, "expected_at": *v.ExpectedAt, "doc": string(doc), "created_at": at, "updated_at": at})}}
	if v.HostID != "" {
		rows = append(rows, row{"visit_hosts", e.tenantCols(map[string]any{"visit_id": v.ID, "person_id": v.HostID})})
	}
	return rows
}

func (e *env) bookingRows(i int) []row {
	at := e.at(i)
	b := cloud.Booking{ID: ids.New(ids.Booking), Tenant: e.t, TypeID: ids.New(ids.BookingType), SiteID: e.site(i),
		Status: cloud.BookingConfirmed, StartsAt: at.Add(48 * time.Hour), EndsAt: at.Add(49 * time.Hour), CreatedAt: at, UpdatedAt: at}
	var confirmBy any
	if i%200 == 0 {
		b.Status = cloud.BookingPending
		confirmBy = time.Now().Add(24 * 365 * time.Hour)
	}
	doc, err := storedoc.EncodeBooking(b)
	if err != nil {
		panic(err)
	}
	return []row{{"bookings", e.tenantCols(map[string]any{"id": b.ID, "type_id": b.TypeID, "site_id": b.SiteID, "status": string(b.Status),
		"starts_at": b.StartsAt, "confirm_by": confirmBy, "doc": string(doc), "created_at": at, "updated_at": at})}}
}

func (e *env) auditRows(i int) []row {
	action := "visit.update"
	if i%200 == 0 {
		action = "visitor.erase"
	}
	return []row{{"audit_events", e.tenantCols(map[string]any{"id": ids.New(ids.AuditEvent), "action": action, "actor_kind": "api_key",
		"object_type": "visit", "object_id": ids.New(ids.Visit), "detail": "{}", "created_at": e.at(i)})}}
}

func (e *env) punchRows(i int) []row {
	at := e.at(i)
	kind := "in"
	if i%2 == 1 {
		kind = "out"
	}
	return []row{{"attendance_events", e.tenantCols(map[string]any{"id": ids.New(ids.AttendanceEvent), "person_id": e.people[i%500],
		"site_id": e.site(i), "kind": kind, "source": "api", "occurred_at": at, "received_at": at, "day": at.Format(time.DateOnly),
		"created_at": at})}}
}

// timesheetRows: 500 people's timesheets, a period (a week) after
// another.
func (e *env) timesheetRows(i int) []row {
	var rows []row
	week := i / 500
	if i%500 == 0 {
		starts := time.Date(2100, 1, 4, 0, 0, 0, 0, time.UTC).AddDate(0, 0, 7*week) // after today: the service makes no period to follow them
		id := ids.New(ids.TimesheetPeriod)
		e.periods = append(e.periods, id)
		rows = append(rows, row{"timesheet_periods", e.tenantCols(map[string]any{"id": id, "kind": "weekly",
			"starts_on": starts.Format(time.DateOnly), "ends_on": starts.AddDate(0, 0, 6).Format(time.DateOnly),
			"payroll_on": starts.AddDate(0, 0, 9).Format(time.DateOnly), "label": "Week " + strconv.Itoa(week),
			"closes_at": starts.AddDate(0, 0, 7), "closed_at": starts.AddDate(0, 0, 7), "created_at": e.at(i)})})
	}
	status := "to_confirm"
	if i%200 == 0 {
		status = "to_approve"
	}
	at := e.at(i)
	rows = append(rows, row{"timesheets", e.tenantCols(map[string]any{"id": ids.New(ids.Timesheet), "period_id": e.periods[week],
		"person_id": e.people[i%500], "status": status, "minutes": 2400, "days": 5, "punches": 10, "unpaired": 0,
		"created_at": at, "updated_at": at})})
	return rows
}

func (e *env) webhookRows(i int) []row {
	at := e.at(i)
	status := "succeeded"
	if i%200 == 0 {
		status = "failed"
	}
	return []row{
		{"webhook_deliveries", e.tenantCols(map[string]any{"endpoint_id": e.endpoint, "event_id": e.events[i], "event_type": "visit.created",
			"status": status, "attempts": 1, "step": 1, "last_attempt_at": at, "last_status_code": 200, "created_at": at, "updated_at": at})},
		{"webhook_attempts", e.tenantCols(map[string]any{"id": ids.New(ids.WebhookAttempt), "endpoint_id": e.endpoint, "event_id": e.events[i],
			"created_at": at, "duration_us": 1500, "status_code": 200, "succeeded": true})},
	}
}

func ptr[T any](v T) *T { return &v }

// inserter writes rows of one table, each with the columns the table
// has (a row may name more: those of the other store's schema).
type inserter interface {
	insert(ctx context.Context, table string, rows []row) error
}

type sqliteInserter struct {
	db   *sql.DB
	cols map[string][]string
}

func (s *sqliteInserter) columns(ctx context.Context, table string) ([]string, error) {
	if c, ok := s.cols[table]; ok {
		return c, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	s.cols[table] = out
	return out, rows.Err()
}

func (s *sqliteInserter) insert(ctx context.Context, table string, rows []row) error {
	if len(rows) == 0 {
		return nil
	}
	all, err := s.columns(ctx, table)
	if err != nil {
		return err
	}
	var cols []string
	for _, c := range all {
		if _, ok := rows[0].cols[c]; ok {
			cols = append(cols, c)
		}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	st, err := tx.PrepareContext(ctx, "INSERT INTO "+table+" ("+strings.Join(cols, ", ")+") VALUES (?"+strings.Repeat(", ?", len(cols)-1)+")")
	if err != nil {
		return err
	}
	args := make([]any, len(cols))
	for _, r := range rows {
		for i, c := range cols {
			switch v := r.cols[c].(type) {
			case time.Time:
				args[i] = v.UnixMicro()
			case bool:
				args[i] = map[bool]int{false: 0, true: 1}[v]
			default:
				args[i] = v
			}
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

type pgInserter struct {
	conn   *pgx.Conn
	schema string
	cols   map[string][]string
}

func (p *pgInserter) insert(ctx context.Context, table string, rows []row) error {
	if len(rows) == 0 {
		return nil
	}
	all, ok := p.cols[table]
	if !ok {
		r, err := p.conn.Query(ctx, `SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2
			ORDER BY ordinal_position`, p.schema, table)
		if err != nil {
			return err
		}
		if all, err = pgx.CollectRows(r, pgx.RowTo[string]); err != nil {
			return err
		}
		p.cols[table] = all
	}
	var cols []string
	for _, c := range all {
		if _, ok := rows[0].cols[c]; ok {
			cols = append(cols, c)
		}
	}
	vals := make([][]any, len(rows))
	for i, r := range rows {
		vals[i] = make([]any, len(cols))
		for j, c := range cols {
			vals[i][j] = r.cols[c]
		}
	}
	_, err := p.conn.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromRows(vals))
	return err
}
