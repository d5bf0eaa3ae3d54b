// Command attendance is the load program of attendance (issue 6): one
// organisation with -people people and a month of their punches, on SQLite
// or PostgreSQL, through the real cloud.Service and the real HTTP API
// (httpapi in this process, over loopback). It measures:
//
//   - build: Service.RebuildTimesheets of the month from scratch (a
//     timesheet made per person from every punch), then again with nothing
//     changed (the path that writes nothing);
//   - close: Service.ClosePeriods once the month has ended (every
//     timesheet to to_confirm, each with a timesheet.ready event), which
//     the first GET after the month's end would otherwise pay for;
//   - punch: Service.RecordPunch, the real-time path that recomputes the
//     person's timesheet on every punch, for -punches punches into the
//     built month, one at a time and then on -concurrency goroutines;
//   - GET /v1/timesheet-periods?limit=25 (the month with its counts over
//     every timesheet) and GET /v1/timesheets?period_id=…&limit=100,
//     -requests each, one at a time and then on -concurrency goroutines.
//
// The month is October 2026 at a London site, in an organisation whose
// periods are calendar months (London time). The service's clock is fixed:
// on 1 October while the settings are made, so that October is the
// tenant's first period, then on 3 November, so that October has ended.
// Each person works -days of October's weekdays, in around 08:30 and out
// around 17:15 with jitter, out and back in for lunch on some days; a few
// days have no out (forgotten) or no in. The people go in through the
// plain Store, not the Service (whose writes also record events), and the
// punches through Store.Attendance's InsertPunch in transactions of
// -batch, with no timesheet work; the seeding time is printed but is not
// a figure.
//
// Checks (any failure exits 1): October exists with the expected days;
// the build makes one timesheet per person with punches, and each
// timesheet's minutes, days, punches and unpaired punches equal what the
// program computes from the stays it generated (so does their sum); the
// repeat writes nothing; closing moves every timesheet to to_confirm;
// every RecordPunch is new, and afterwards every timesheet again equals
// the program's own figures; every HTTP answer is 200, the periods page
// shows October closed with counts summing to the timesheets built, and
// the timesheets page holds a full page of October's.
//
// On PostgreSQL (-database-url, SVC_TEST_POSTGRES_URL or the local
// default) everything runs in a fresh schema, vacuumed and analysed after
// seeding, after the build and after the punches, as autovacuum would
// (-analyze), and dropped at the end; -trace-sql counts the statements of
// each measured step. SQLite is a file in a temporary directory, removed
// at the end. Progress goes to stderr, the summary to stdout.
//
//	make bench-attendance          # both stores
//	go run ./cloud/bench/attendance -store postgres -trace-sql
package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/bench/benchutil"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/shared/fakeclock"
	"github.com/svc-vms/svc/shared/ids"
)

// The month measured and the service clock's two readings.
var (
	month      = cloud.Date{Year: 2026, Month: time.October, Day: 1}
	monthEnd   = cloud.Date{Year: 2026, Month: time.October, Day: 31}
	settingsAt = time.Date(2026, time.October, 1, 7, 0, 0, 0, time.UTC)
	measureAt  = time.Date(2026, time.November, 3, 9, 0, 0, 0, time.UTC)
)

const siteZone = "Europe/London" // the seeded site used, and the organisation's zone

type options struct {
	store       string
	databaseURL string
	people      int
	days        int
	lunch       float64
	punches     int
	requests    int
	concurrency int
	batch       int
	seed        uint64
	analyze     bool
	traceSQL    bool
	cpuProfile  string
	pgMaxConns  int
	keep        bool
	timeout     time.Duration
}

func (o options) validate() error {
	switch {
	case o.store != "sqlite" && o.store != "postgres":
		return fmt.Errorf("-store: %q is not sqlite or postgres", o.store)
	case o.store == "postgres" && o.databaseURL == "":
		return errors.New("-database-url: needed for -store postgres")
	case o.people < 1:
		return errors.New("-people: must be at least 1")
	case o.days < 1 || o.days > len(weekdays()):
		return fmt.Errorf("-days: must be 1 to %d, October 2026's weekdays", len(weekdays()))
	case o.lunch < 0 || o.lunch > 1:
		return errors.New("-lunch: must be 0 to 1")
	case o.punches < 2 || o.punches%2 != 0:
		return errors.New("-punches: must be even and at least 2 (an in and an out per new day)")
	case o.requests < 1:
		return errors.New("-requests: must be at least 1")
	case o.concurrency < 1:
		return errors.New("-concurrency: must be at least 1")
	case o.batch < 1:
		return errors.New("-batch: must be at least 1")
	}
	return nil
}

func main() {
	var o options
	defURL := os.Getenv("SVC_TEST_POSTGRES_URL")
	if defURL == "" {
		defURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	flag.StringVar(&o.store, "store", "sqlite", "sqlite or postgres")
	flag.StringVar(&o.databaseURL, "database-url", defURL, "PostgreSQL URL (a fresh schema is made in it and dropped)")
	flag.IntVar(&o.people, "people", 10000, "people, each with a month of punches")
	flag.IntVar(&o.days, "days", 20, "days each person works, of October 2026's 22 weekdays")
	flag.Float64Var(&o.lunch, "lunch", 0.1, "share of working days with a lunch out and in")
	flag.IntVar(&o.punches, "punches", 2000, "RecordPunch: punches (an in and an out on a day the person did not work) one at a time, and again as many concurrently")
	flag.IntVar(&o.requests, "requests", 2000, "requests of each GET, one at a time, and again as many concurrently")
	flag.IntVar(&o.concurrency, "concurrency", 8, "goroutines of the concurrent RecordPunch and GET runs")
	flag.IntVar(&o.batch, "batch", 5000, "seeding: punches per Store.Attendance transaction")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the generated punches")
	flag.BoolVar(&o.analyze, "analyze", true, "PostgreSQL: VACUUM ANALYZE the schema after seeding, after the build and after the punches, as autovacuum would (it may be off)")
	flag.BoolVar(&o.traceSQL, "trace-sql", false, "PostgreSQL: count and time the statements of each measured step (adds to its time)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the first build to this file")
	flag.IntVar(&o.pgMaxConns, "pg-max-conns", 0, "PostgreSQL pool size (0: pgxpool's default, as svc-cloud runs)")
	flag.BoolVar(&o.keep, "keep", false, "keep the database (the SQLite file or the PostgreSQL schema) for a look afterwards, and say where it is")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "give up after this long")
	flag.Parse()
	if err := o.validate(); err != nil || flag.NArg() > 0 {
		if err != nil {
			fmt.Fprintln(os.Stderr, "attendance:", err)
		}
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	err := run(ctx, o)
	cancel()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "attendance: FAILED:", err)
		os.Exit(1)
	}
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// ---- the clock ----

// The service's clock is a fakeclock.Clock: fixed, moved by the bench.

// ---- the database ----

// env is one fresh database and what the bench made in it.
type env struct {
	o       options
	store   cloud.Store // the plain store, not the Service's event decorator
	svc     *cloud.Service
	clock   *fakeclock.Clock
	tracer  *swapTracer // PostgreSQL
	schema  string      // PostgreSQL
	pgURL   string
	closers []func()

	tenant    cloud.Tenant
	secretKey string
	siteID    string
	site      *time.Location
	period    cloud.TimesheetPeriod // October
	people    []string
	want      map[string]*cloud.Totals // by person: the program's own figures
	free      map[string][]cloud.Date  // by person: October days without punches
	punches   int                      // in October, seeded and recorded
}

func (e *env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

func open(ctx context.Context, o options) (_ *env, err error) {
	e := &env{o: o, clock: &fakeclock.Clock{}, pgURL: o.databaseURL}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	switch o.store {
	case "sqlite":
		dir, err := os.MkdirTemp("", "bench-attendance-")
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "cloud.db")
		e.closers = append(e.closers, func() {
			if o.keep {
				progress("kept %s", path)
				return
			}
			os.RemoveAll(dir)
		})
		s, err := sqlite.Open(ctx, path, kektest.Ring())
		if err != nil {
			return nil, err
		}
		e.closers = append(e.closers, func() { s.Close() })
		e.store = s
	case "postgres":
		var rnd [6]byte
		_, _ = rand.Read(rnd[:])
		e.schema = "bench_attendance_" + hex.EncodeToString(rnd[:])
		if err := e.pgExec(ctx, "", "CREATE SCHEMA "+e.schema); err != nil {
			return nil, fmt.Errorf("create schema: %w", err)
		}
		e.closers = append(e.closers, func() {
			if o.keep {
				progress("kept schema %s", e.schema)
				return
			}
			dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := e.pgExec(dctx, "", "DROP SCHEMA "+e.schema+" CASCADE"); err != nil {
				progress("drop schema %s: %v (drop it by hand)", e.schema, err)
			} else {
				progress("dropped schema %s", e.schema)
			}
		})
		cfg, err := pgxpool.ParseConfig(o.databaseURL)
		if err != nil {
			return nil, err
		}
		cfg.ConnConfig.RuntimeParams["search_path"] = e.schema
		if o.pgMaxConns > 0 {
			cfg.MaxConns = int32(o.pgMaxConns)
		}
		e.tracer = &swapTracer{}
		cfg.ConnConfig.Tracer = e.tracer
		s, err := postgres.OpenConfig(ctx, cfg, kektest.Ring())
		if err != nil {
			return nil, err
		}
		e.closers = append(e.closers, func() { s.Close() })
		e.store = s
	}
	// As svc-cloud makes it: httpapi's renderer, so writes record their
	// events (httpapi.New sets it again).
	e.svc = cloud.NewService(e.store, e.clock.Now)
	e.svc.SetEventRenderer(httpapi.RenderEvent)
	return e, nil
}

// pgExec runs q on a connection of its own whose search_path is schema
// (unless "").
func (e *env) pgExec(ctx context.Context, schema, q string) error {
	cfg, err := pgx.ParseConfig(e.pgURL)
	if err != nil {
		return err
	}
	if schema != "" {
		cfg.RuntimeParams["search_path"] = schema
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, q)
	return err
}

// analyze runs VACUUM ANALYZE on the schema's tables, as autovacuum would
// have after so many inserts and updates (it is off on the development
// machine's instance): statistics for the planner, and a visibility map,
// without which the counts of GET /v1/timesheet-periods are a sequential
// scan over the timesheets' dead versions instead of an index-only scan.
func (e *env) analyze(ctx context.Context) error {
	if e.schema == "" || !e.o.analyze {
		return nil
	}
	start := time.Now()
	conn, err := pgx.Connect(ctx, e.pgURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := benchutil.AnalyzeSchema(ctx, conn, e.schema, true); err != nil {
		return err
	}
	progress("  VACUUM ANALYZE in %.1f s", time.Since(start).Seconds())
	return nil
}

// ---- SQL tracing ----

// swapTracer hands the pool's statements to the current
// benchutil.SQLTracer, one per measured step; none between steps.
type swapTracer struct {
	cur atomic.Pointer[benchutil.SQLTracer]
}

func (s *swapTracer) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if t := s.cur.Load(); t != nil {
		return t.TraceQueryStart(ctx, c, d)
	}
	return ctx
}

func (s *swapTracer) TraceQueryEnd(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryEndData) {
	if t := s.cur.Load(); t != nil {
		t.TraceQueryEnd(ctx, c, d)
	}
}

// traced runs fn with the statements counted when -trace-sql is on, then
// prints them per unit (n of them).
func (e *env) traced(what, unit string, n *int, fn func() error) error {
	if e.tracer == nil || !e.o.traceSQL {
		return fn()
	}
	t := &benchutil.SQLTracer{}
	t.On(true)
	e.tracer.cur.Store(t)
	err := fn()
	e.tracer.cur.Store(nil)
	t.On(false)
	fmt.Printf("\n-- SQL of %s --\n", what)
	t.Report(os.Stdout, unit, max(*n, 1))
	return err
}

// ---- seeding ----

// weekdays are October 2026's weekdays.
func weekdays() []cloud.Date {
	var out []cloud.Date
	for d := month; !d.After(monthEnd); d = d.AddDays(1) {
		if wd := d.Weekday(); wd != time.Saturday && wd != time.Sunday {
			out = append(out, d)
		}
	}
	return out
}

// stay is a generated stay: in and out, either missing when the person
// forgot to punch it.
type stay struct{ in, out *time.Time }

// add counts s (on its day) in t as cloud.Summarise would: a stay with
// both punches adds its whole minutes; one without adds an unpaired punch.
func (s stay) add(t *cloud.Totals) (minutes int) {
	switch {
	case s.in != nil && s.out != nil:
		t.Punches += 2
		minutes = int(s.out.Sub(*s.in) / time.Minute)
		t.Minutes += minutes
	default:
		t.Punches++
		t.Unpaired++
	}
	return minutes
}

// at is day d at h:m plus jitter minutes (and random seconds), at loc.
func at(d cloud.Date, loc *time.Location, h, m int, jitter time.Duration, rng *mrand.Rand) time.Time {
	t := time.Date(d.Year, d.Month, d.Day, h, m, 0, 0, loc)
	return t.Add(jitter + time.Duration(rng.IntN(60))*time.Second).UTC()
}

func minutes(rng *mrand.Rand, lo, hi int) time.Duration {
	return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Minute
}

// workDay generates one working day's stays. The first in is 07:30–09:30
// and the last out 16:30–18:30; lunch is out 12:00–13:00 and back 30–60
// minutes later, so the latest in of a day is before 14:00 and the next
// day's first punch is more than cloud.MaxStay after it: a forgotten out
// leaves an unpaired in, never a stay into the next day.
func workDay(d cloud.Date, loc *time.Location, lunch float64, rng *mrand.Rand) []stay {
	in := at(d, loc, 8, 30, minutes(rng, -60, 59), rng)
	out := at(d, loc, 17, 15, minutes(rng, -45, 74), rng)
	var stays []stay
	if rng.Float64() < lunch {
		lout := at(d, loc, 12, 0, minutes(rng, 0, 59), rng)
		lin := lout.Add(minutes(rng, 30, 60))
		stays = []stay{{&in, &lout}, {&lin, &out}}
	} else {
		stays = []stay{{&in, &out}}
	}
	switch r := rng.Float64(); {
	case r < 0.015: // forgot to punch out
		stays[len(stays)-1].out = nil
	case r < 0.02: // forgot to punch in
		stays[0].in = nil
	}
	return stays
}

// seed makes the organisation, the settings, the people and their punches.
func (e *env) seed(ctx context.Context) error {
	e.clock.Set(settingsAt)
	res, err := e.svc.Seed(ctx, "Attendance bench", cloud.PlanEnterprise)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	e.tenant = cloud.Tenant{OrgID: res.Organisation.ID, Mode: cloud.ModeTest}
	e.secretKey = res.Keys.SecretTest
	for _, s := range res.Test.Sites {
		if s.Timezone == siteZone {
			e.siteID = s.ID
		}
	}
	if e.siteID == "" {
		return fmt.Errorf("seed: no site at %s", siteZone)
	}
	if e.site, err = time.LoadLocation(siteZone); err != nil {
		return err
	}
	// Made while the clock is in October, October is the tenant's first
	// period (ensurePeriods starts at the period holding today).
	_, err = e.svc.UpdateAttendanceSettings(ctx, e.tenant, cloud.AttendanceSettingsInput{
		Timezone: cloud.Some(siteZone),
		Periods:  cloud.Some(cloud.PeriodRules{Kind: cloud.PeriodMonthly, MonthDay: 1, PayrollDays: 5})})
	if err != nil {
		return fmt.Errorf("attendance settings: %w", err)
	}
	err = e.store.Attendance(ctx, e.tenant, func(tx cloud.AttendanceTx) error {
		ps, err := tx.Periods(month, monthEnd)
		if err != nil {
			return err
		}
		if len(ps) != 1 || ps[0].StartsOn != month || ps[0].EndsOn != monthEnd {
			return fmt.Errorf("check: want one period, 2026-10-01 to 2026-10-31; have %v", ps)
		}
		e.period = ps[0]
		return nil
	})
	if err != nil {
		return err
	}
	progress("organisation %s, site %s, period %s %q", e.tenant.OrgID, e.siteID, e.period.ID, e.period.Label)

	start := time.Now()
	if err := e.seedPeople(ctx); err != nil {
		return err
	}
	progress("%d people in %.1f s", len(e.people), time.Since(start).Seconds())
	start = time.Now()
	if err := e.seedPunches(ctx); err != nil {
		return err
	}
	d := time.Since(start)
	progress("%d punches in %.1f s (%.0f/s)", e.punches, d.Seconds(), float64(e.punches)/d.Seconds())
	return nil
}

// workers is how many goroutines write the seed: PostgreSQL takes
// concurrent writers, SQLite one at a time.
func (e *env) workers() int {
	if e.o.store == "postgres" {
		return 4
	}
	return 1
}

func (e *env) seedPeople(ctx context.Context) error {
	now := e.clock.Now()
	e.people = make([]string, e.o.people)
	for i := range e.people {
		e.people[i] = ids.New(ids.Person)
	}
	return parallel(ctx, e.workers(), len(e.people), func(i int) error {
		p := cloud.Person{ID: e.people[i], Tenant: e.tenant, Name: fmt.Sprintf("Worker %05d", i+1),
			Email: fmt.Sprintf("worker%05d@attendance.example", i+1), SiteID: e.siteID, Active: true, CreatedAt: now, UpdatedAt: now}
		if err := e.store.CreatePerson(ctx, p); err != nil {
			return fmt.Errorf("create person %d: %w", i, err)
		}
		return nil
	})
}

// parallel runs fn(0..n-1) on w goroutines; the first error stops it.
func parallel(ctx context.Context, w, n int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, w)
	for g := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					errs[g] = err
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	return cmp.Or(errors.Join(errs...), ctx.Err())
}

// seedPunches generates each person's month and inserts it, -batch
// punches per transaction, keeping only the expected totals and the days
// each person did not work.
func (e *env) seedPunches(ctx context.Context) error {
	rng := mrand.New(mrand.NewPCG(e.o.seed, 1))
	wd := weekdays()
	e.want = make(map[string]*cloud.Totals, len(e.people))
	e.free = make(map[string][]cloud.Date, len(e.people))
	batches := make(chan []cloud.AttendanceEvent, e.workers())
	var inserted atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, e.workers())
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for g := range e.workers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				err := e.store.Attendance(wctx, e.tenant, func(tx cloud.AttendanceTx) error {
					for _, p := range b {
						if err := tx.InsertPunch(p); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					errs[g] = fmt.Errorf("insert punches: %w", err)
					cancel()
					return
				}
				if n := inserted.Add(int64(len(b))); n/100000 != (n-int64(len(b)))/100000 {
					progress("  %d punches", n)
				}
			}
		}()
	}
	var batch []cloud.AttendanceEvent
	send := func() bool {
		if len(batch) == 0 {
			return true
		}
		select {
		case batches <- batch:
			batch = nil
			return true
		case <-wctx.Done():
			return false
		}
	}
	punch := func(person string, kind cloud.PunchKind, t time.Time) {
		received := t.Add(time.Duration(1+rng.IntN(5)) * time.Second)
		batch = append(batch, cloud.AttendanceEvent{ID: ids.New(ids.AttendanceEvent), Tenant: e.tenant, PersonID: person, SiteID: e.siteID,
			Kind: kind, Source: cloud.SourceTerminal, OccurredAt: t, ReceivedAt: received, Day: cloud.DateOf(t.In(e.site)),
			DeviceID: "bench-terminal", CreatedAt: received})
	}
	ok := true
	for _, person := range e.people {
		t := &cloud.Totals{}
		e.want[person] = t
		work := slices.Clone(wd)
		rng.Shuffle(len(work), func(i, j int) { work[i], work[j] = work[j], work[i] })
		work = work[:e.o.days]
		for d := month; !d.After(monthEnd); d = d.AddDays(1) {
			if !slices.Contains(work, d) {
				e.free[person] = append(e.free[person], d)
				continue
			}
			dayMinutes := 0
			for _, s := range workDay(d, e.site, e.o.lunch, rng) {
				if s.in != nil {
					punch(person, cloud.PunchIn, *s.in)
				}
				if s.out != nil {
					punch(person, cloud.PunchOut, *s.out)
				}
				dayMinutes += s.add(t)
			}
			if dayMinutes > 0 {
				t.Days++
			}
		}
		e.punches += t.Punches
		if len(batch) >= e.o.batch {
			if ok = send(); !ok {
				break
			}
		}
	}
	if ok {
		send()
	}
	close(batches)
	wg.Wait()
	return cmp.Or(errors.Join(errs...), ctx.Err())
}

// ---- checks ----

// timesheets reads every timesheet of October in status st, and
// October's counts, through the Store's read path (no locks taken).
func (e *env) timesheets(ctx context.Context, st cloud.TimesheetStatus) ([]cloud.Timesheet, cloud.TimesheetCounts, error) {
	var out []cloud.Timesheet
	p := cloud.Page{Limit: 100}
	for {
		rows, more, err := e.store.ListTimesheets(ctx, e.tenant, cloud.TimesheetFilter{PeriodID: e.period.ID, Status: st}, p)
		if err != nil {
			return nil, cloud.TimesheetCounts{}, err
		}
		out = append(out, rows...)
		if !more || len(rows) == 0 {
			break
		}
		last := rows[len(rows)-1]
		p.After = &cloud.Position{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	period, err := e.store.TimesheetPeriod(ctx, e.tenant, e.period.ID)
	return out, period.Counts, err
}

// checkTimesheets checks that October has one timesheet per person, all
// in status st, each with the totals the program expects; it returns the
// timesheets and the sum of their minutes.
func (e *env) checkTimesheets(ctx context.Context, st cloud.TimesheetStatus) ([]cloud.Timesheet, int, error) {
	tss, c, err := e.timesheets(ctx, st)
	if err != nil {
		return nil, 0, err
	}
	if c.Total() != len(e.want) || len(tss) != len(e.want) {
		return nil, 0, fmt.Errorf("check: October has %d timesheets (%d %s, counts %+v); want %d, one per person with punches",
			c.Total(), len(tss), st, c, len(e.want))
	}
	sum, want, bad := 0, 0, 0
	seen := map[string]bool{}
	for _, ts := range tss {
		w, ok := e.want[ts.PersonID]
		switch {
		case !ok:
			return nil, 0, fmt.Errorf("check: timesheet %s of %s, who has no punches", ts.ID, ts.PersonID)
		case seen[ts.PersonID]:
			return nil, 0, fmt.Errorf("check: a second timesheet (%s) of %s", ts.ID, ts.PersonID)
		case ts.Totals != *w:
			if bad++; bad <= 5 {
				progress("  timesheet %s of %s: %+v; want %+v", ts.ID, ts.PersonID, ts.Totals, *w)
			}
		}
		seen[ts.PersonID] = true
		sum += ts.Totals.Minutes
	}
	for _, w := range e.want {
		want += w.Minutes
	}
	if bad > 0 || sum != want {
		return nil, 0, fmt.Errorf("check: %d timesheets differ from the generated stays; minutes %d, want %d", bad, sum, want)
	}
	return tss, sum, nil
}

// ---- the measurements ----

// report collects the figures and the checks passed, printed at the end.
type report struct{ figures, checks []string }

// figure records a figure with the machine's load averages as it was
// taken (other work on the machine slows every figure).
func (r *report) figure(format string, args ...any) {
	line := fmt.Sprintf(format, args...) + " [load " + benchutil.LoadAvg() + "]"
	r.figures = append(r.figures, line)
	fmt.Fprintln(os.Stderr, "  = "+line)
}

func (r *report) pass(format string, args ...any) {
	r.checks = append(r.checks, fmt.Sprintf(format, args...))
}

func run(ctx context.Context, o options) error {
	e, err := open(ctx, o)
	if err != nil {
		return err
	}
	defer e.close()
	var r report
	progress("seeding (%s, %d people, %d days each)", o.store, o.people, o.days)
	start := time.Now()
	if err := e.seed(ctx); err != nil {
		return err
	}
	seedTime := time.Since(start)
	r.pass("October 2026 is the tenant's first period (%s, %q, 2026-10-01 to 2026-10-31)", e.period.ID, e.period.Label)
	if err := e.analyze(ctx); err != nil {
		return err
	}
	// The month has ended.
	e.clock.Set(measureAt)
	for _, step := range []func(context.Context, *report) error{e.build, e.closeMonth, e.recordPunches, e.analyzeStep, e.api} {
		if err := step(ctx, &r); err != nil {
			return err
		}
	}

	fmt.Printf("\nattendance bench: store %s, %d people, %d punches in October 2026 (%d working days each, lunch out and in on %.0f%% of days, %d unpaired), then %d more through RecordPunch\n",
		o.store, len(e.people), e.punches, o.days, 100*o.lunch, e.unpaired(), 2*o.punches)
	fmt.Printf("machine: %d CPUs, GOMAXPROCS %d, %s", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	if o.store == "postgres" {
		fmt.Printf(", PostgreSQL %s (pool: %s; VACUUM ANALYZE after seeding, the build and the punches: %v)", e.pgVersion(ctx), poolSize(o), o.analyze)
	}
	fmt.Printf("\nseeding (not a tracked figure): %.1f s\n\n", seedTime.Seconds())
	for _, l := range r.figures {
		fmt.Println(l)
	}
	fmt.Println("\nchecks passed:")
	for _, c := range r.checks {
		fmt.Println("  ok  " + c)
	}
	return nil
}

func (e *env) analyzeStep(ctx context.Context, _ *report) error { return e.analyze(ctx) }

// rebuild times one RebuildTimesheets of October.
func (e *env) rebuild(ctx context.Context, what string) (int, time.Duration, error) {
	var n int
	var d time.Duration
	unit := len(e.want)
	err := e.traced(what, "timesheet", &unit, func() error {
		start := time.Now()
		var err error
		n, err = e.svc.RebuildTimesheets(ctx, e.tenant, e.period.ID)
		d = time.Since(start)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", what, err)
	}
	return n, d, nil
}

// build builds October's timesheets from scratch, checks them, and builds
// them again with nothing changed.
func (e *env) build(ctx context.Context, r *report) error {
	runtime.GC()
	if e.o.cpuProfile != "" {
		f, err := os.Create(e.o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	n, d, err := e.rebuild(ctx, "the build")
	if e.o.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}
	r.figure("build (RebuildTimesheets, from scratch): %d timesheets from %d punches in %.2f s: %.0f punches/s, %.0f timesheets/s",
		n, e.punches, d.Seconds(), float64(e.punches)/d.Seconds(), float64(n)/d.Seconds())
	if n != len(e.want) {
		return fmt.Errorf("check: RebuildTimesheets counted %d people; %d have punches", n, len(e.want))
	}
	tss, sum, err := e.checkTimesheets(ctx, cloud.TimesheetOpen)
	if err != nil {
		return fmt.Errorf("after the build: %w", err)
	}
	r.pass("build: %d timesheets (open), one per person with punches; each one's minutes, days, punches and unpaired equal the generated stays'; minutes sum %d (%.1f hours a person)",
		len(tss), sum, float64(sum)/60/float64(len(tss)))
	if err := e.analyze(ctx); err != nil {
		return err
	}

	// The clock moves on a minute: a timesheet written again would show it.
	e.clock.Advance(time.Minute)
	n, d, err = e.rebuild(ctx, "the repeat")
	if err != nil {
		return err
	}
	r.figure("repeat (RebuildTimesheets, nothing changed): %d timesheets from %d punches in %.2f s: %.0f punches/s",
		n, e.punches, d.Seconds(), float64(e.punches)/d.Seconds())
	after, _, err := e.checkTimesheets(ctx, cloud.TimesheetOpen)
	if err != nil {
		return fmt.Errorf("after the repeat: %w", err)
	}
	before := map[string]cloud.Timesheet{}
	for _, ts := range tss {
		before[ts.ID] = ts
	}
	for _, ts := range after {
		if b, ok := before[ts.ID]; !ok || !b.UpdatedAt.Equal(ts.UpdatedAt) {
			return fmt.Errorf("check: the repeat wrote timesheet %s (updated_at %s, was %s)", ts.ID, ts.UpdatedAt, b.UpdatedAt)
		}
	}
	r.pass("repeat: counted %d people and wrote no timesheet (the same IDs, every updated_at unchanged after the clock moved a minute)", n)
	return nil
}

// closeMonth closes October, as the maintenance loop, or else the first
// read of periods or timesheets after the month's end, would.
func (e *env) closeMonth(ctx context.Context, r *report) error {
	var closed int
	var d time.Duration
	unit := len(e.want)
	err := e.traced("ClosePeriods", "timesheet", &unit, func() error {
		start := time.Now()
		var err error
		closed, err = e.svc.ClosePeriods(ctx, e.tenant)
		d = time.Since(start)
		return err
	})
	if err != nil {
		return fmt.Errorf("close: %w", err)
	}
	r.figure("close (ClosePeriods: %d timesheets to to_confirm, each with a timesheet.ready event): %.2f s", len(e.want), d.Seconds())
	if closed != 1 {
		return fmt.Errorf("check: ClosePeriods closed %d periods; want 1, October", closed)
	}
	if _, _, err := e.checkTimesheets(ctx, cloud.TimesheetToConfirm); err != nil {
		return fmt.Errorf("after closing: %w", err)
	}
	r.pass("close: October closed, its %d timesheets all to_confirm, totals unchanged", len(e.want))
	return nil
}

// recordPunches records -punches punches one at a time, then as many on
// -concurrency goroutines, into the closed month.
func (e *env) recordPunches(ctx context.Context, r *report) error {
	pairs, err := e.newDays(2 * e.o.punches)
	if err != nil {
		return err
	}
	for _, c := range []int{1, e.o.concurrency} {
		lat := make([]time.Duration, 0, e.o.punches)
		var mu sync.Mutex
		var d time.Duration
		n := e.o.punches
		err := e.traced(fmt.Sprintf("RecordPunch, %d at a time", c), "punch", &n, func() error {
			start := time.Now()
			err := parallel(ctx, c, e.o.punches/2, func(i int) error {
				ls, err := e.recordPair(ctx, pairs[i])
				mu.Lock()
				lat = append(lat, ls...)
				mu.Unlock()
				return err
			})
			d = time.Since(start)
			return err
		})
		if err != nil {
			return fmt.Errorf("RecordPunch (%d at a time): %w", c, err)
		}
		pairs = pairs[e.o.punches/2:]
		slices.Sort(lat)
		r.figure("RecordPunch, %d at a time: %d punches in %.2f s: %.0f punches/s; latency p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms",
			c, len(lat), d.Seconds(), float64(len(lat))/d.Seconds(), benchutil.MS(benchutil.Pct(lat, 50)), benchutil.MS(benchutil.Pct(lat, 90)),
			benchutil.MS(benchutil.Pct(lat, 99)), benchutil.MS(lat[len(lat)-1]))
	}
	_, sum, err := e.checkTimesheets(ctx, cloud.TimesheetToConfirm)
	if err != nil {
		return fmt.Errorf("after RecordPunch: %w", err)
	}
	r.pass("RecordPunch: %d punches, each new; afterwards every timesheet equals the generated stays with the new days (minutes sum %d)", 2*e.o.punches, sum)
	return nil
}

func (e *env) unpaired() int {
	n := 0
	for _, w := range e.want {
		n += w.Unpaired
	}
	return n
}

func poolSize(o options) string {
	if o.pgMaxConns > 0 {
		return fmt.Sprint(o.pgMaxConns)
	}
	return fmt.Sprintf("pgxpool default, %d", max(4, runtime.NumCPU()))
}

func (e *env) pgVersion(ctx context.Context) string {
	conn, err := pgx.Connect(ctx, e.pgURL)
	if err != nil {
		return "?"
	}
	defer conn.Close(context.Background())
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "?"
	}
	return v
}

// newDay is a day a person did not work, for RecordPunch.
type newDay struct {
	person  string
	in, out time.Time
}

// newDays picks n/2 distinct (person, day) pairs from the days people did
// not work (weekends and weekdays off), each a stay 09:00–09:30 to
// 13:00–13:30: more than cloud.MaxStay after any in of the day before,
// ending before any punch of the day after, so it pairs with itself only.
func (e *env) newDays(n int) ([]newDay, error) {
	rng := mrand.New(mrand.NewPCG(e.o.seed, 2))
	type pd struct {
		person string
		day    cloud.Date
	}
	var all []pd
	for _, p := range e.people {
		for _, d := range e.free[p] {
			all = append(all, pd{p, d})
		}
	}
	if len(all) < n/2 {
		return nil, fmt.Errorf("-punches %d needs %d days off, the people have %d: raise -people or lower -days", n, n/2, len(all))
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	out := make([]newDay, n/2)
	for i := range out {
		x := all[i]
		nd := newDay{person: x.person, in: at(x.day, e.site, 9, 0, minutes(rng, 0, 29), rng), out: at(x.day, e.site, 13, 0, minutes(rng, 0, 29), rng)}
		t := e.want[x.person]
		if (stay{&nd.in, &nd.out}).add(t) > 0 {
			t.Days++
		}
		out[i] = nd
	}
	return out, nil
}

// recordPair records a new day's in and out through the Service and
// returns each call's latency.
func (e *env) recordPair(ctx context.Context, nd newDay) ([]time.Duration, error) {
	var lat []time.Duration
	for _, p := range []struct {
		kind cloud.PunchKind
		at   time.Time
	}{{cloud.PunchIn, nd.in}, {cloud.PunchOut, nd.out}} {
		t := p.at
		start := time.Now()
		ev, isNew, err := e.svc.RecordPunch(ctx, e.tenant, cloud.PunchInput{PersonID: nd.person, SiteID: e.siteID, Kind: string(p.kind),
			Source: string(cloud.SourceTerminal), OccurredAt: &t, DeviceID: "bench-terminal"})
		lat = append(lat, time.Since(start))
		if err != nil {
			return lat, err
		}
		if !isNew {
			return lat, fmt.Errorf("check: punch of %s at %s taken as a repeat of %s", nd.person, t, ev.ID)
		}
	}
	return lat, nil
}

// ---- the HTTP API ----

type periodsPage struct {
	Data []struct {
		ID       string `json:"id"`
		StartsOn string `json:"starts_on"`
		Status   string `json:"status"`
		Counts   struct {
			Open      int `json:"open"`
			ToConfirm int `json:"to_confirm"`
			ToApprove int `json:"to_approve"`
			Approved  int `json:"approved"`
		} `json:"counts"`
	} `json:"data"`
}

type timesheetsPage struct {
	Data []struct {
		ID       string `json:"id"`
		PeriodID string `json:"period_id"`
	} `json:"data"`
	HasMore bool `json:"has_more"`
}

// api serves httpapi in this process and measures the two GETs.
func (e *env) api(ctx context.Context, r *report) error {
	ts, err := benchutil.API(ctx, e.svc)
	if err != nil {
		return err
	}
	defer ts.Close()
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 2 * e.o.concurrency}}
	defer client.CloseIdleConnections()

	periods := ts.URL + "/v1/timesheet-periods?limit=25"
	checkPeriods := func(body []byte) error {
		var p periodsPage
		if err := json.Unmarshal(body, &p); err != nil {
			return err
		}
		for _, d := range p.Data {
			if d.ID != e.period.ID {
				continue
			}
			c := d.Counts
			if sum := c.Open + c.ToConfirm + c.ToApprove + c.Approved; sum != len(e.want) || c.ToConfirm != len(e.want) || d.Status != "closed" {
				return fmt.Errorf("the October period is %s with counts %+v (sum %d); want closed with %d to_confirm", d.Status, c, sum, len(e.want))
			}
			return nil
		}
		return fmt.Errorf("the October period (%s) is not on the page: %s", e.period.ID, body)
	}
	sheets := ts.URL + "/v1/timesheets?" + url.Values{"period_id": {e.period.ID}, "limit": {"100"}}.Encode()
	checkSheets := func(body []byte) error {
		var p timesheetsPage
		if err := json.Unmarshal(body, &p); err != nil {
			return err
		}
		want := min(100, len(e.want))
		if len(p.Data) != want || p.HasMore != (len(e.want) > 100) {
			return fmt.Errorf("%d timesheets, has_more %v; want %d", len(p.Data), p.HasMore, want)
		}
		for _, d := range p.Data {
			if d.PeriodID != e.period.ID {
				return fmt.Errorf("timesheet %s of period %s", d.ID, d.PeriodID)
			}
		}
		return nil
	}
	for _, t := range []struct {
		name, url string
		check     func([]byte) error
	}{
		{"GET /v1/timesheet-periods?limit=25", periods, checkPeriods},
		{"GET /v1/timesheets?period_id=…&limit=100", sheets, checkSheets},
	} {
		// Warm up: connections, prepared statements, caches.
		for range 20 {
			if _, _, err := e.get(ctx, client, t.url, t.check); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
		}
		for _, c := range []int{1, e.o.concurrency} {
			lat := make([]time.Duration, e.o.requests)
			var size atomic.Int64
			var d time.Duration
			n := e.o.requests
			err := e.traced(fmt.Sprintf("%s, %d at a time", t.name, c), "request", &n, func() error {
				start := time.Now()
				err := parallel(ctx, c, e.o.requests, func(i int) error {
					b, d, err := e.get(ctx, client, t.url, t.check)
					lat[i] = d
					size.Store(int64(len(b)))
					return err
				})
				d = time.Since(start)
				return err
			})
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			slices.Sort(lat)
			r.figure("%s, %d at a time: %d requests in %.2f s: %.0f requests/s; p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms (%d-byte answers)",
				t.name, c, len(lat), d.Seconds(), float64(len(lat))/d.Seconds(), benchutil.MS(benchutil.Pct(lat, 50)),
				benchutil.MS(benchutil.Pct(lat, 90)), benchutil.MS(benchutil.Pct(lat, 99)), benchutil.MS(lat[len(lat)-1]), size.Load())
		}
	}
	r.pass("GET /v1/timesheet-periods: %d answers, each 200 with October closed and counts summing to %d (all to_confirm)", 2*e.o.requests+20, len(e.want))
	r.pass("GET /v1/timesheets?period_id=…&limit=100: %d answers, each 200 with %d of October's timesheets, has_more %v",
		2*e.o.requests+20, min(100, len(e.want)), len(e.want) > 100)
	return nil
}

// get fetches u with the secret test key and checks the answer; the
// latency is to the answer's last byte, before the check.
func (e *env) get(ctx context.Context, client *http.Client, u string, check func([]byte) error) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+e.secretKey)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return nil, d, err
	}
	if resp.StatusCode != http.StatusOK {
		return b, d, fmt.Errorf("check: status %d: %s", resp.StatusCode, b)
	}
	if err := check(b); err != nil {
		return b, d, fmt.Errorf("check: %w", err)
	}
	return b, d, nil
}
