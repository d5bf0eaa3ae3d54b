// Command kiosk is the load program of the reception kiosk (issue 16): it
// builds a site appliance as svc-edge runs one, with a kiosk, and measures
// what docs/performance.md records under "Reception kiosk (issue 16)".
//
// The setup is real: an edge cache (bbolt, in -dir) filled through the
// cache's own ReplaceSnapshot with -visits visits (mostly past and
// expected ones, -onsite checked in of which -waiting wait for someone),
// -people people with varied names and job titles, 25 teams and the six
// built-in visit types with their default forms (shared/form.Default);
// then an edge.App started from a config file with a kiosk (no sync half:
// the site is offline, so every walk-in's fact waits in the outbox), and
// two browsers paired through App.NewPairingCode and POST /pair, one in
// visitor mode and one in reception mode.
//
// Each operation is measured twice, -runs times over:
//
//   - server: the request through the kiosk's own http.Handler
//     (App.KioskHandler) in this process, with an httptest recorder: the
//     kiosk's time, device check and rendering included, no network;
//   - client: the same request to the kiosk's listener over loopback,
//     timed by the client from writing the request to reading the last
//     byte of the answer (a connection kept alive, no gzip).
//
// Operations: GET /people?q= with 2–7 letter prefixes of real names, every
// kiosk page, and a walk-in from submit to badge (POST /walk-in, which
// records the visit and its fact in one fsync'd bbolt transaction, then
// GET its badge.png). Walk-ins run last in each run, since each one adds a
// visit on site (and a third of them to the queue), and are checked out at
// the desk after it, unmeasured, so every run sees the same site. Then the
// welcome screen's page weight: its HTML and every asset it links, as the
// server sends them.
//
// Lines starting RESULT are the figures, then a summary over the runs;
// progress goes to stderr.
//
//	go run ./cloud/bench/kiosk -runs 3
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/svc-vms/svc/cloud/bench/benchutil"
	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/kiosk"
	"github.com/svc-vms/svc/shared/form"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

var (
	flagDir      = flag.String("dir", "", "work directory (default: a new one under $TMPDIR, removed at the end)")
	flagVisits   = flag.Int("visits", 100000, "visits in the cache")
	flagPeople   = flag.Int("people", 10000, "people in the cache")
	flagOnSite   = flag.Int("onsite", 300, "of the visits, checked in now")
	flagWaiting  = flag.Int("waiting", 50, "of those on site, waiting for someone (team and desk visits nobody has taken)")
	flagSearches = flag.Int("searches", 2000, "person searches per run and side")
	flagRequests = flag.Int("requests", 300, "requests per page, run and side")
	flagWalkIns  = flag.Int("walkins", 100, "walk-ins (submit and badge) per run and side")
	flagRuns     = flag.Int("runs", 3, "runs of every measurement")
	flagWarm     = flag.Int("warm", 20, "unmeasured requests of each operation before each measurement")
	flagOnly     = flag.String("only", "", "measure only the operations whose name matches this regular expression")
	flagSide     = flag.String("side", "both", "server, client or both")
	flagSeed     = flag.Uint64("seed", 16, "seed of the generated names and visits")
	flagCPU      = flag.String("cpuprofile", "", "write a CPU profile of the measurements here")
	flagMem      = flag.String("memprofile", "", "write a heap profile here at the end")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kiosk bench:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := *flagDir
	if dir == "" {
		d, err := os.MkdirTemp("", "kiosk-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	var only *regexp.Regexp
	if *flagOnly != "" {
		var err error
		if only, err = regexp.Compile(*flagOnly); err != nil {
			return fmt.Errorf("-only: %w", err)
		}
	}
	if *flagWaiting > *flagOnSite || *flagOnSite > *flagVisits {
		return errors.New("want -waiting ≤ -onsite ≤ -visits")
	}
	r := rand.New(rand.NewPCG(*flagSeed, 1))
	now := time.Now()

	start := time.Now()
	ds := newDataset(r, now)
	cfgPath, err := ds.write(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "cache of %d visits (%d on site, %d waiting) and %d people written in %v\n",
		*flagVisits, len(ds.onSite), len(ds.waiting), len(ds.people), time.Since(start).Round(time.Millisecond))
	// The visits are in the cache now; this process keeps only the names
	// the requests draw from, so the collector works on a heap like
	// svc-edge's (the View) and not on a second copy of the dataset.
	ds.visits = nil
	ds.visitorNames = make([]string, len(ds.visitors))
	for i, v := range ds.visitors {
		ds.visitorNames[i] = v.name
	}
	ds.visitors = nil
	runtime.GC()

	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	// Free ports, which the file cannot ask for: another svc-edge may run
	// on this machine.
	cfg.Listen, cfg.Kiosk.Listen = "127.0.0.1:0", "127.0.0.1:0"
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	app, err := edge.New(cfg, edge.Deps{Logger: log, OpenPin: edge.SimulatedPins(slog.New(slog.DiscardHandler)), Debounce: -1})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start = time.Now()
	go func() { done <- app.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case <-app.Ready():
	case err := <-done:
		return fmt.Errorf("edge: %w", err)
	}
	fmt.Fprintf(os.Stderr, "svc-edge's App up in %v (cache opened)\n", time.Since(start).Round(time.Millisecond))

	b := &bench{h: app.KioskHandler(), base: "http://" + app.Listening().Kiosk.String(), ds: ds, only: only,
		client: &http.Client{
			Transport:     &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}}
	if b.visitor, err = b.pair(app, kiosk.ModeVisitor); err != nil {
		return err
	}
	if b.desk, err = b.pair(app, kiosk.ModeReception); err != nil {
		return err
	}
	if err := b.prepareWalkIn(); err != nil {
		return err
	}

	if *flagCPU != "" {
		f, err := os.Create(*flagCPU)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Printf("# kiosk bench: GOARCH=%s GOMAXPROCS=%d NumCPU=%d visits=%d people=%d on_site=%d waiting=%d load=%s\n",
		runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), *flagVisits, len(ds.people), len(ds.onSite), len(ds.waiting),
		benchutil.LoadAvg())
	sides := []string{"server", "client"}
	if *flagSide != "both" {
		sides = []string{*flagSide}
	}
	var all []result
	for run := 1; run <= *flagRuns; run++ {
		for _, o := range b.ops() {
			if b.only != nil && !b.only.MatchString(o.name) {
				continue
			}
			for _, side := range sides {
				res, err := b.measure(o, side, run)
				if err != nil {
					return fmt.Errorf("run %d, %s (%s): %w", run, o.name, side, err)
				}
				all = append(all, res...)
			}
		}
		if b.only == nil || b.only.MatchString("walk-in") {
			for _, side := range sides {
				res, err := b.walkIns(side, run)
				if err != nil {
					return fmt.Errorf("run %d, walk-in (%s): %w", run, side, err)
				}
				all = append(all, res...)
			}
			// The next run measures the same site: the walk-ins leave.
			if err := b.checkOutWalkIns(); err != nil {
				return err
			}
		}
	}
	if b.only == nil || b.only.MatchString("weight") {
		if err := b.pageWeight(); err != nil {
			return err
		}
	}
	summary(all)
	if *flagMem != "" {
		f, err := os.Create(*flagMem)
		if err != nil {
			return err
		}
		defer f.Close()
		runtime.GC()
		if err := pprof.WriteHeapProfile(f); err != nil {
			return err
		}
	}
	return nil
}

// dataset is what the cache is filled with, and what the requests pick
// their names and visits from.
type dataset struct {
	now      time.Time
	siteID   string
	edgeID   string
	gateID   string
	people   []protocol.Person
	teams    []protocol.Team
	visitors []visitor
	visits   []protocol.Visit
	// visitorNames are the visitors' names, kept once the cache is written.
	visitorNames []string
	onSite       []string // visit IDs
	waiting      []string
	onSiteNames  []string // their visitors' names
}

func ptr[T any](v T) *T { return &v }

func newDataset(r *rand.Rand, now time.Time) *dataset {
	ds := &dataset{now: now, siteID: ids.New(ids.Site), edgeID: ids.New(ids.Edge), gateID: ids.New(ids.Gate)}
	for range *flagPeople {
		p := protocol.Person{ID: ids.New(ids.Person), Name: personName(r), Active: r.IntN(50) != 0,
			PassIssuedAt: now.Add(-90 * 24 * time.Hour).Unix()}
		if r.IntN(4) != 0 {
			p.JobTitle = jobTitles[r.IntN(len(jobTitles))]
		}
		ds.people = append(ds.people, p)
	}
	for i, name := range teamNames {
		t := protocol.Team{ID: ids.New(ids.Team), Name: name, VisitorsCanChoose: i%3 == 0, Archived: i == 24}
		switch i % 5 {
		case 1:
			t.SiteID = ds.siteID
		case 4:
			t.SiteID = ids.New(ids.Site) // another site's team: not offered here
		}
		ds.teams = append(ds.teams, t)
	}
	// Visitors come back: 100,000 visits are of about 40,000 people.
	for i := range max(*flagVisits*2/5, 1) {
		ds.visitors = append(ds.visitors, newVisitor(r, ids.New(ids.Visitor), i))
	}
	var types []string
	for _, k := range form.BuiltinTypes {
		for range typeWeights[k] {
			types = append(types, k)
		}
	}
	day := 24 * time.Hour
	for i := range *flagVisits {
		vis := ds.visitors[r.IntN(len(ds.visitors))]
		id := ids.New(ids.Visit)
		v := protocol.Visit{ID: id, ForVisitID: id, Rules: protocol.Rules{Window: protocol.Window{Before: 30, After: 30}, GateIDs: []string{}},
			Type: types[r.IntN(len(types))], Source: "invitation", VisitorID: vis.id, VisitorName: vis.name,
			VisitorEmail: vis.email, VisitorPhone: vis.phone, VisitorCompany: vis.company}
		switch n := r.IntN(100); {
		case n < 85:
			host := ds.people[r.IntN(len(ds.people))]
			v.Audience, v.HostID, v.HostName = "person", host.ID, host.Name
		case n < 97:
			t := ds.teams[r.IntN(len(ds.teams))]
			v.Audience, v.TeamID, v.TeamName = "team", t.ID, t.Name
			if r.IntN(2) == 0 {
				host := ds.people[r.IntN(len(ds.people))]
				v.HostID, v.HostName = host.ID, host.Name
			}
		default:
			v.Audience = "desk"
		}
		// A day's visit runs 9:00–17:00 give or take; the cache keeps a
		// week of the past (edge.PruneRetention) and what is expected.
		expect := func(at time.Time) {
			from := at.Truncate(time.Hour)
			v.ExpectedAt, v.ExpectedUntil = ptr(from), ptr(from.Add(time.Duration(1+r.IntN(8))*time.Hour))
		}
		switch {
		case i < *flagWaiting:
			at := now.Add(-time.Duration(r.IntN(25*60)) * time.Second)
			if v.Audience == "person" {
				t := ds.teams[0]
				v.Audience, v.HostID, v.HostName, v.TeamID, v.TeamName = "team", "", "", t.ID, t.Name
			}
			v.HostID, v.HostName = "", ""
			v.Status, v.CheckedInAt, v.WaitingSince, v.NeedsSomeone, v.Uses = string(passrule.CheckedIn), ptr(at), ptr(at), true, 1
			expect(at)
			ds.waiting = append(ds.waiting, id)
		case i < *flagOnSite:
			at := now.Add(-time.Duration(r.IntN(8*3600)) * time.Second)
			if v.Audience != "person" {
				host := ds.people[r.IntN(len(ds.people))]
				v.HostID, v.HostName = host.ID, host.Name
			}
			v.Status, v.CheckedInAt, v.WaitingSince, v.Uses = string(passrule.CheckedIn), ptr(at), ptr(at), 1
			expect(at)
			if r.IntN(10) == 0 {
				v.Source, v.ExpectedAt, v.ExpectedUntil = "walk_in", nil, nil
			}
		case i < *flagVisits*58/100: // the past week
			at := now.Add(-time.Duration(1+r.IntN(6*24*3600)) * time.Second)
			expect(at)
			switch n := r.IntN(100); {
			case n < 88:
				in := at.Add(time.Duration(r.IntN(3600)) * time.Second)
				v.Status, v.CheckedInAt, v.CheckedOutAt, v.Uses = string(passrule.CheckedOut), ptr(in), ptr(in.Add(2*time.Hour)), 1
				if n < 8 {
					v.Source, v.ExpectedAt, v.ExpectedUntil = "walk_in", nil, nil
				}
			case n < 94:
				v.Status = string(passrule.NoShow)
			default:
				v.Status = string(passrule.Cancelled)
			}
		case i < *flagVisits*60/100: // later today
			expect(now.Add(time.Duration(1+r.IntN(8*3600)) * time.Second))
			v.Status = string(passrule.Expected)
		default: // the next six weeks
			expect(now.Add(time.Duration(r.IntN(42)+1)*day + time.Duration(r.IntN(10*3600))*time.Second))
			v.Status = string(passrule.Expected)
			if r.IntN(20) == 0 {
				v.Status = string(passrule.AwaitingApproval)
			}
			if r.IntN(10) == 0 {
				v.Source = "pre_registration"
			}
		}
		if v.Status == string(passrule.CheckedIn) {
			ds.onSite = append(ds.onSite, id)
			ds.onSiteNames = append(ds.onSiteNames, v.VisitorName)
		}
		ds.visits = append(ds.visits, v)
	}
	return ds
}

// write fills the cache file through the cache's own ReplaceSnapshot, as
// the sync half does with the cloud's snapshot, and writes svc-edge's
// config file beside it; it returns the config's path.
func (ds *dataset) write(dir string) (string, error) {
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		return "", err
	}
	cachePath := filepath.Join(state, "cache.db")
	c, err := cache.Open(cachePath, cache.Options{EdgeID: ds.edgeID})
	if err != nil {
		return "", err
	}
	key, err := passtoken.NewKey(nil)
	if err != nil {
		return "", err
	}
	pub := key.Public()
	first := protocol.Snapshot{Seq: 1,
		Settings: &protocol.Settings{Timezone: "Europe/London", OfflineLimitMinutes: 60, SiteName: "London HQ", WaitLimitMinutes: 10},
		Gates:    []protocol.Gate{{ID: ds.gateID, Name: "Turnstile", Direction: "both"}},
		Keys:     []protocol.Key{{ID: pub.ID, Public: pub.Key}},
		Teams:    ds.teams}
	for i, k := range form.BuiltinTypes {
		first.VisitTypes = append(first.VisitTypes, protocol.VisitType{Key: k, Name: typeNames[k], Position: i, Enabled: true, Form: form.Default(k)})
	}
	parts := []protocol.Snapshot{first}
	for i := 0; i < max(len(ds.visits), len(ds.people)); i += protocol.MaxSnapshot {
		p := &parts[len(parts)-1]
		if i > 0 {
			parts = append(parts, protocol.Snapshot{Seq: 1, Gates: []protocol.Gate{}, Keys: []protocol.Key{}})
			p = &parts[len(parts)-1]
		}
		p.Visits = ds.visits[min(i, len(ds.visits)):min(i+protocol.MaxSnapshot, len(ds.visits))]
		p.People = ds.people[min(i, len(ds.people)):min(i+protocol.MaxSnapshot, len(ds.people))]
	}
	for i := range parts {
		parts[i].Part, parts[i].Parts = i+1, len(parts)
	}
	if err := c.ReplaceSnapshot(parts); err != nil {
		_ = c.Close()
		return "", err
	}
	if err := c.MarkSynced(ds.now); err != nil {
		_ = c.Close()
		return "", err
	}
	if err := c.Close(); err != nil {
		return "", err
	}
	// svc-edge's config, as an installer writes it: the broker is never
	// dialled (no sync half), so the site is offline throughout.
	cfg := map[string]any{
		"site":       map[string]any{"mode": "test", "org_id": ids.New(ids.Organisation), "site_id": ds.siteID},
		"edge_id":    ds.edgeID,
		"broker":     map[string]any{"url": "tcp://127.0.0.1:1883", "username": ds.edgeID, "password": "unused"},
		"data_dir":   dir,
		"cache_path": cachePath,
		"listen":     "127.0.0.1:8081",
		"kiosk":      map[string]any{"listen": "127.0.0.1:8080", "languages": []string{"en", "fr"}, "label": "62x100"},
		"gates": []any{map[string]any{"gate_id": ds.gateID, "readers": []any{map[string]any{"kind": "camera"}},
			"relay": map[string]any{"pin": "GPIO17", "pulse": "1ms"}}},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "svc-edge.json")
	return path, os.WriteFile(path, b, 0o600)
}

// device is a paired browser: its cookie.
type device struct {
	mode   string
	cookie string
}

type bench struct {
	h       http.Handler
	base    string
	client  *http.Client
	ds      *dataset
	only    *regexp.Regexp
	visitor *device
	desk    *device
	// shown is the details page's cf._shown for a meeting with no answers.
	shown string
	// made counts the walk-ins made; signedIn are those still on site.
	made     int
	signedIn []string
}

// pair makes a pairing code as `svc-edge kiosk pair` does and types it
// into POST /pair over loopback, keeping the device cookie.
func (b *bench) pair(app *edge.App, mode string) (*device, error) {
	code, err := app.NewPairingCode("bench "+mode, mode)
	if err != nil {
		return nil, err
	}
	res, err := b.client.PostForm(b.base+"/pair", url.Values{"code": {code.Code}})
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == "svc_kiosk" {
			return &device{mode: mode, cookie: c.Name + "=" + c.Value}, nil
		}
	}
	return nil, fmt.Errorf("pair %s: %s without a device cookie", mode, res.Status)
}

// call is one request of an operation.
type call struct {
	dev    *device
	method string
	path   string
	form   url.Values
	want   []int // statuses that are right
}

// answer is what a request got.
type answer struct {
	status   int
	location string
	body     []byte
}

// server sends c through the kiosk's handler in this process.
func (b *bench) server(c call) (answer, time.Duration) {
	var body io.Reader
	if c.form != nil {
		body = strings.NewReader(c.form.Encode())
	}
	req := httptest.NewRequest(c.method, c.path, body)
	req.Header.Set("Cookie", c.dev.cookie)
	if c.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	rec := httptest.NewRecorder()
	t0 := time.Now()
	b.h.ServeHTTP(rec, req)
	d := time.Since(t0)
	return answer{status: rec.Code, location: rec.Header().Get("Location"), body: rec.Body.Bytes()}, d
}

// loopback sends c to the kiosk's listener.
func (b *bench) loopback(c call) (answer, time.Duration, error) {
	var body io.Reader
	if c.form != nil {
		body = strings.NewReader(c.form.Encode())
	}
	req, err := http.NewRequest(c.method, b.base+c.path, body)
	if err != nil {
		return answer{}, 0, err
	}
	req.Header.Set("Cookie", c.dev.cookie)
	if c.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	t0 := time.Now()
	res, err := b.client.Do(req)
	if err != nil {
		return answer{}, 0, err
	}
	buf, err := io.ReadAll(res.Body)
	res.Body.Close()
	d := time.Since(t0)
	if err != nil {
		return answer{}, 0, err
	}
	return answer{status: res.StatusCode, location: res.Header.Get("Location"), body: buf}, d, nil
}

func (b *bench) do(side string, c call) (answer, time.Duration, error) {
	var a answer
	var d time.Duration
	var err error
	if side == "server" {
		a, d = b.server(c)
	} else {
		a, d, err = b.loopback(c)
	}
	if err == nil && !slices.Contains(c.want, a.status) {
		err = fmt.Errorf("%s %s: status %d, want %v: %.300s", c.method, c.path, a.status, c.want, a.body)
	}
	return a, d, err
}

// op is a kiosk request measured many times: call(i) is its i-th request.
type op struct {
	name   string
	target time.Duration // p99 target on the server; 0 for none
	n      int
	call   func(r *rand.Rand, i int) call
}

func (b *bench) ops() []op {
	ds := b.ds
	pages := *flagRequests
	ok := []int{http.StatusOK}
	active := func(r *rand.Rand) protocol.Person {
		for {
			if p := ds.people[r.IntN(len(ds.people))]; p.Active {
				return p
			}
		}
	}
	teamTo := func() string {
		for _, t := range ds.teams {
			if t.VisitorsCanChoose && !t.Archived && (t.SiteID == "" || t.SiteID == ds.siteID) {
				return "team:" + t.ID
			}
		}
		return "desk"
	}()
	page := 20 * time.Millisecond
	get := func(dev *device, path string) call {
		return call{dev: dev, method: http.MethodGet, path: path, want: ok}
	}
	ops := []op{
		{name: "person search GET /people?q=", target: 10 * time.Millisecond, n: *flagSearches, call: func(r *rand.Rand, _ int) call {
			return get(b.visitor, "/people?q="+url.QueryEscape(prefix(r, active(r).Name)))
		}},
		{name: "welcome GET /", target: page, n: pages, call: func(*rand.Rand, int) call { return get(b.visitor, "/") }},
		{name: "walk-in who GET /walk-in (teams, no query)", target: page, n: pages, call: func(*rand.Rand, int) call {
			return get(b.visitor, "/walk-in")
		}},
		{name: "walk-in who GET /walk-in?q=", target: page, n: pages, call: func(r *rand.Rand, _ int) call {
			return get(b.visitor, "/walk-in?q="+url.QueryEscape(prefix(r, active(r).Name)))
		}},
		{name: "walk-in type GET /walk-in/type", target: page, n: pages, call: func(r *rand.Rand, _ int) call {
			return get(b.visitor, "/walk-in/type?to=person:"+active(r).ID)
		}},
		{name: "walk-in name GET /walk-in/name", target: page, n: pages, call: func(r *rand.Rand, _ int) call {
			return get(b.visitor, "/walk-in/name?"+url.Values{"to": {"person:" + active(r).ID}, "type": {"meeting"}}.Encode())
		}},
		{name: "walk-in name POST /walk-in/name (returning-visitor lookup)", target: page, n: pages, call: func(r *rand.Rand, _ int) call {
			name := ds.visitorNames[r.IntN(len(ds.visitorNames))]
			return call{dev: b.visitor, method: http.MethodPost, path: "/walk-in/name", want: []int{http.StatusOK, http.StatusSeeOther},
				form: url.Values{"to": {teamTo}, "type": {"meeting"}, "name": {name}}}
		}},
	}
	for _, k := range form.BuiltinTypes {
		ops = append(ops, op{name: "walk-in details GET /walk-in/details, " + k + " form", target: page, n: pages,
			call: func(r *rand.Rand, _ int) call {
				q := url.Values{"to": {"person:" + active(r).ID}, "type": {k}, "name": {personName(r)}}
				return get(b.visitor, "/walk-in/details?"+q.Encode())
			}})
	}
	ops = append(ops,
		op{name: "check-in GET /check-in", target: page, n: pages, call: func(*rand.Rand, int) call { return get(b.visitor, "/check-in") }},
		op{name: "check-in POST /check-in (unknown code)", target: page, n: pages, call: func(*rand.Rand, int) call {
			return call{dev: b.visitor, method: http.MethodPost, path: "/check-in", want: []int{http.StatusUnprocessableEntity},
				form: url.Values{"code": {ids.FormatShortCode(ids.ShortCode(ids.New(ids.Visit)))}}}
		}},
		op{name: "sign-out search GET /sign-out?q=", target: page, n: pages, call: func(r *rand.Rand, _ int) call {
			return get(b.visitor, "/sign-out?q="+url.QueryEscape(prefix(r, ds.onSiteNames[r.IntN(len(ds.onSiteNames))])))
		}},
		op{name: "reception GET /reception (queue and on site)", target: page, n: pages, call: func(*rand.Rand, int) call {
			return get(b.desk, "/reception")
		}},
		op{name: "take GET /reception/visits/{id}/take?q=", target: page, n: pages, call: func(r *rand.Rand, _ int) call {
			id := ds.waiting[r.IntN(len(ds.waiting))]
			return get(b.desk, "/reception/visits/"+id+"/take?q="+url.QueryEscape(prefix(r, active(r).Name)))
		}},
		op{name: "hand-over GET /reception/visits/{id}/hand-over?q=", target: page, n: pages, call: func(r *rand.Rand, _ int) call {
			id := ds.waiting[r.IntN(len(ds.waiting))]
			return get(b.desk, "/reception/visits/"+id+"/hand-over?q="+url.QueryEscape(prefix(r, active(r).Name)))
		}},
		op{name: "evacuation list GET /reception/on-site/print", target: page, n: pages, call: func(*rand.Rand, int) call {
			return get(b.desk, "/reception/on-site/print")
		}},
		op{name: "done GET /visits/{id}/done", target: page, n: pages, call: func(r *rand.Rand, _ int) call {
			return get(b.desk, "/visits/"+ds.onSite[r.IntN(len(ds.onSite))]+"/done")
		}},
		op{name: "badge GET /visits/{id}/badge.png", target: page, n: pages, call: func(r *rand.Rand, _ int) call {
			return get(b.desk, "/visits/"+ds.onSite[r.IntN(len(ds.onSite))]+"/badge.png")
		}},
	)
	return ops
}

// result is one measurement: an operation on one side in one run.
type result struct {
	op     string
	side   string
	run    int
	target time.Duration
	ds     []time.Duration // sorted
	bytes  int             // mean answer size
	alloc  int             // bytes allocated a request (the whole process, both sides of loopback)
	gcs    int             // garbage collections during the measurement
}

func (r result) print() {
	fmt.Printf("RESULT run=%d side=%s op=%q n=%d p50_ms=%.3f p99_ms=%.3f max_ms=%.3f mean_ms=%.3f bytes=%d",
		r.run, r.side, r.op, len(r.ds), benchutil.MS(benchutil.Pct(r.ds, 50)), benchutil.MS(benchutil.Pct(r.ds, 99)),
		benchutil.MS(r.ds[len(r.ds)-1]), benchutil.MS(mean(r.ds)), r.bytes)
	if r.alloc > 0 {
		fmt.Printf(" alloc_bytes=%d gcs=%d", r.alloc, r.gcs)
	}
	if r.target > 0 && r.side == "server" {
		fmt.Printf(" target_p99_ms=%g met=%v", benchutil.MS(r.target), benchutil.Pct(r.ds, 99) < r.target)
	}
	fmt.Println()
}

func mean(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(max(len(ds), 1))
}

func (b *bench) measure(o op, side string, run int) ([]result, error) {
	r := rand.New(rand.NewPCG(*flagSeed+uint64(run), uint64(len(o.name))))
	for i := range *flagWarm {
		if _, _, err := b.do(side, o.call(r, i)); err != nil {
			return nil, err
		}
	}
	ds := make([]time.Duration, 0, o.n)
	size := 0
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for i := range o.n {
		a, d, err := b.do(side, o.call(r, i))
		if err != nil {
			return nil, err
		}
		ds = append(ds, d)
		size += len(a.body)
	}
	runtime.ReadMemStats(&m1)
	slices.Sort(ds)
	res := result{op: o.name, side: side, run: run, target: o.target, ds: ds, bytes: size / max(o.n, 1),
		alloc: int((m1.TotalAlloc - m0.TotalAlloc) / uint64(max(o.n, 1))), gcs: int(m1.NumGC - m0.NumGC)}
	res.print()
	return []result{res}, nil
}

// prepareWalkIn reads the details page of a meeting once, for the list of
// questions it showed (cf._shown), which a submit carries back.
func (b *bench) prepareWalkIn() error {
	q := url.Values{"to": {"desk"}, "type": {"meeting"}, "name": {"Setup Visitor"}}
	a, _, err := b.do("client", call{dev: b.visitor, method: http.MethodGet, path: "/walk-in/details?" + q.Encode(), want: []int{http.StatusOK}})
	if err != nil {
		return err
	}
	m := regexp.MustCompile(`name="cf\._shown" value="([^"]*)"`).FindSubmatch(a.body)
	if m == nil {
		return errors.New("the meeting's details page has no cf._shown")
	}
	b.shown = string(m[1])
	return nil
}

// walkInForm is a visitor signing in for a meeting: to a person mostly,
// to a team or the desk now and then (those join the queue), with the
// meeting form's required answers.
func (b *bench) walkInForm(r *rand.Rand) url.Values {
	b.made++
	to := "desk"
	switch n := b.made % 10; {
	case n < 7:
		for {
			if p := b.ds.people[r.IntN(len(b.ds.people))]; p.Active {
				to = "person:" + p.ID
				break
			}
		}
	case n < 9:
		for _, t := range b.ds.teams {
			if t.VisitorsCanChoose && !t.Archived && (t.SiteID == "" || t.SiteID == b.ds.siteID) {
				to = "team:" + t.ID
				break
			}
		}
	}
	name := personName(r)
	return url.Values{"to": {to}, "type": {"meeting"}, "visit_id": {ids.New(ids.Visit)}, "visitor_id": {""}, "name": {name},
		"phone": {fmt.Sprintf("+44 7700 9%05d", b.made%100000)}, "email": {ascii(name) + "@example.com"},
		"company": {companies[r.IntN(len(companies))]}, "cf._shown": {b.shown}, "cf.company": {companies[r.IntN(len(companies))]},
		"cf.agenda": {"Quarterly review"}, "cf.has_vehicle": {"false"}, "cf.nda_accepted": {"true"}}
}

// walkIns measures a walk-in from submit to badge: POST /walk-in (the
// visit and its fact recorded in one fsync'd bbolt transaction), then GET
// the badge PNG it redirects towards, as the done page's <img> does.
func (b *bench) walkIns(side string, run int) ([]result, error) {
	r := rand.New(rand.NewPCG(*flagSeed+uint64(run), 7))
	one := func() (submit, badge, total time.Duration, size int, err error) {
		f := b.walkInForm(r)
		c := call{dev: b.visitor, method: http.MethodPost, path: "/walk-in", form: f, want: []int{http.StatusSeeOther}}
		t0 := time.Now()
		a, d1, err := b.do(side, c)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		id := f.Get("visit_id")
		if a.location != "/visits/"+id+"/done" {
			return 0, 0, 0, 0, fmt.Errorf("walk-in went to %q", a.location)
		}
		b.signedIn = append(b.signedIn, id)
		png, d2, err := b.do(side, call{dev: b.visitor, method: http.MethodGet, path: "/visits/" + id + "/badge.png", want: []int{http.StatusOK}})
		if err != nil {
			return 0, 0, 0, 0, err
		}
		total = time.Since(t0)
		if !bytes.HasPrefix(png.body, []byte("\x89PNG")) {
			return 0, 0, 0, 0, errors.New("the badge is not a PNG")
		}
		return d1, d2, total, len(png.body), nil
	}
	for range min(*flagWarm, 5) {
		if _, _, _, _, err := one(); err != nil {
			return nil, err
		}
	}
	var subs, badges, totals []time.Duration
	size := 0
	for range *flagWalkIns {
		s, bd, t, n, err := one()
		if err != nil {
			return nil, err
		}
		subs, badges, totals = append(subs, s), append(badges, bd), append(totals, t)
		size += n
	}
	var out []result
	for _, x := range []struct {
		name   string
		ds     []time.Duration
		target time.Duration
		bytes  int
	}{
		{"walk-in submit POST /walk-in (fsync'd)", subs, 0, 0},
		{"walk-in badge GET /visits/{id}/badge.png", badges, 0, size / max(*flagWalkIns, 1)},
		{"walk-in submit to badge rendered", totals, 100 * time.Millisecond, 0},
	} {
		slices.Sort(x.ds)
		res := result{op: x.name, side: side, run: run, target: x.target, ds: x.ds, bytes: x.bytes}
		res.print()
		out = append(out, res)
	}
	return out, nil
}

// checkOutWalkIns checks out, at the desk, every visitor the walk-ins
// signed in, unmeasured: each run then finds the site as the first did
// (300 on site, 50 waiting), not grown by the walk-ins before it.
func (b *bench) checkOutWalkIns() error {
	for _, id := range b.signedIn {
		c := call{dev: b.desk, method: http.MethodPost, path: "/reception/visits/" + id + "/check-out", form: url.Values{},
			want: []int{http.StatusSeeOther}}
		if _, _, err := b.do("server", c); err != nil {
			return err
		}
	}
	b.signedIn = b.signedIn[:0]
	return nil
}

// pageWeight is the welcome screen as a browser loads it with a cold
// cache: the HTML and every stylesheet, script and image it links, the
// bytes of each body as sent (no gzip: the kiosk does not compress).
func (b *bench) pageWeight() error {
	a, _, err := b.do("client", call{dev: b.visitor, method: http.MethodGet, path: "/", want: []int{http.StatusOK}})
	if err != nil {
		return err
	}
	total := len(a.body)
	fmt.Printf("RESULT weight item=%q bytes=%d\n", "/", len(a.body))
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:href|src)="(/[^"]*)"`).FindAllSubmatch(a.body, -1) {
		p := string(m[1])
		if seen[p] || !regexp.MustCompile(`\.(css|js|png|svg|ico|woff2?)$`).MatchString(p) {
			continue // links to other pages are not loaded with this one
		}
		seen[p] = true
		x, _, err := b.do("client", call{dev: b.visitor, method: http.MethodGet, path: p, want: []int{http.StatusOK}})
		if err != nil {
			return err
		}
		total += len(x.body)
		fmt.Printf("RESULT weight item=%q bytes=%d\n", p, len(x.body))
	}
	fmt.Printf("RESULT weight item=total bytes=%d files=%d target_bytes=%d met=%v\n", total, 1+len(seen), 100*1000, total < 100*1000)
	return nil
}

// summary prints, for each operation and side, the range of p50, p99
// and max over the runs.
func summary(all []result) {
	type key struct{ op, side string }
	var order []key
	by := map[key][]result{}
	for _, r := range all {
		k := key{r.op, r.side}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], r)
	}
	fmt.Printf("\n# summary over %d run(s), GOMAXPROCS=%d, GOARCH=%s: ranges over the runs, ms\n", *flagRuns, runtime.GOMAXPROCS(0), runtime.GOARCH)
	fmt.Printf("| operation | side | n | p50 | p99 | max | p99 target | met |\n|---|---|---:|---:|---:|---:|---:|---|\n")
	for _, k := range order {
		rs := by[k]
		rng := func(f func(result) time.Duration) string {
			lo, hi := time.Duration(1<<62), time.Duration(0)
			for _, r := range rs {
				lo, hi = min(lo, f(r)), max(hi, f(r))
			}
			if len(rs) == 1 {
				return fmt.Sprintf("%.2f", benchutil.MS(lo))
			}
			return fmt.Sprintf("%.2f–%.2f", benchutil.MS(lo), benchutil.MS(hi))
		}
		target, met := "", ""
		if t := rs[0].target; t > 0 && k.side == "server" {
			target = fmt.Sprintf("%g", benchutil.MS(t))
			met = "yes"
			for _, r := range rs {
				if benchutil.Pct(r.ds, 99) >= t {
					met = "no"
				}
			}
		}
		fmt.Printf("| %s | %s | %d | %s | %s | %s | %s | %s |\n", k.op, k.side, len(rs[0].ds),
			rng(func(r result) time.Duration { return benchutil.Pct(r.ds, 50) }),
			rng(func(r result) time.Duration { return benchutil.Pct(r.ds, 99) }),
			rng(func(r result) time.Duration { return r.ds[len(r.ds)-1] }), target, met)
	}
}
