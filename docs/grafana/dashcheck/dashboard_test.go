package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestInterpolate(t *testing.T) {
	values := map[string]string{"edge": ".*", "edge_job": "svc-edge", "datasource": "prom", "__rate_interval": "20s"}
	got, err := interpolate(`rate(x{job=~"$edge_job", instance=~"$edge"}[$__rate_interval]) ${datasource}`, values)
	if err != nil {
		t.Fatal(err)
	}
	if want := `rate(x{job=~"svc-edge", instance=~".*"}[20s]) prom`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if _, err := interpolate(`x{job=~"$nope"}`, values); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("an unknown variable: err = %v, want one naming it", err)
	}
}

func TestAllValue(t *testing.T) {
	v := variable{Name: "instance"}
	if got, want := v.allValueFor([]string{"10.0.0.6:8090", "10.0.0.5:8090"}), `(10\\.0\\.0\\.5:8090|10\\.0\\.0\\.6:8090)`; got != want {
		t.Errorf("two values: %s, want %s", got, want)
	}
	if got, want := v.allValueFor([]string{"svc-cloud"}), "svc-cloud"; got != want {
		t.Errorf("one value: %s, want %s", got, want)
	}
	v.AllValue = ".*"
	if got := v.allValueFor([]string{"a", "b"}); got != ".*" {
		t.Errorf("custom allValue: %s, want .*", got)
	}
}

func TestParseLabelValues(t *testing.T) {
	sel, label, err := parseLabelValues(`label_values(svc_edge_build_info{job=~"$edge_job"}, instance)`)
	if err != nil || sel != `svc_edge_build_info{job=~"$edge_job"}` || label != "instance" {
		t.Errorf("got %q, %q, %v", sel, label, err)
	}
	if _, _, err := parseLabelValues("query_result(up)"); err == nil {
		t.Error("query_result: no error, want one")
	}
}

func TestEmptyReason(t *testing.T) {
	if emptyReason(`sum by (kind) (rate(svc_cloud_db_statement_errors_total{job=~"$job"}[5m]))`) == "" {
		t.Error("statement errors: no reason, want the SQLite one")
	}
	if why := emptyReason(`svc_cloud_db_statement_errors_total / svc_cloud_http_requests_total`); why != "" {
		t.Errorf("a query that also reads requests may not be empty, got reason %q", why)
	}
}

// TestSvcDashboard checks the dashboard's shape without a Prometheus:
// every panel and query on the ${datasource} variable, unique panel IDs,
// panels inside the 24 columns and not on top of each other, only
// variables it defines, and only series that svc-cloud's or svc-edge's
// code writes (make dashboard-check then asks a real Prometheus).
func TestSvcDashboard(t *testing.T) {
	d, err := loadDashboard("../svc.json")
	if err != nil {
		t.Fatal(err)
	}
	if d.Schema < 39 {
		t.Errorf("schemaVersion %d: older than Grafana 11's", d.Schema)
	}
	values := map[string]string{"__rate_interval": "1m"}
	for _, v := range d.Templating.List {
		values[v.Name] = "x"
		if v.Type == "query" {
			if _, _, err := parseLabelValues(v.Definition); err != nil {
				t.Errorf("variable %s: %v", v.Name, err)
			}
		}
	}
	if _, ok := values["datasource"]; !ok {
		t.Fatal("no datasource variable")
	}
	known := seriesInCode(t)
	ids := map[int]bool{}
	type rect struct {
		title      string
		x, y, w, h int
	}
	var placed []rect
	for _, p := range d.Panels {
		g := p.GridPos
		if g.X < 0 || g.W <= 0 || g.X+g.W > 24 || g.H <= 0 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, g)
		}
		for _, o := range placed {
			if g.X < o.x+o.w && o.x < g.X+g.W && g.Y < o.y+o.h && o.y < g.Y+g.H {
				t.Errorf("panel %q overlaps %q", p.Title, o.title)
			}
		}
		placed = append(placed, rect{p.Title, g.X, g.Y, g.W, g.H})
	}
	for _, p := range d.allPanels() {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want uid ${datasource}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q: no queries", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q, query %s: datasource is not ${datasource}", p.Title, tg.RefID)
			}
			if _, err := interpolate(tg.Expr, values); err != nil {
				t.Errorf("panel %q, query %s: %v", p.Title, tg.RefID, err)
			}
			names := metricNames(tg.Expr)
			if len(names) == 0 {
				t.Errorf("panel %q, query %s: reads no svc, Go or process series: %s", p.Title, tg.RefID, tg.Expr)
			}
			for _, n := range names {
				if !known(n) {
					t.Errorf("panel %q, query %s: %s is written by neither svc-cloud nor svc-edge", p.Title, tg.RefID, n)
				}
			}
		}
	}
}

// seriesInCode answers whether a series name is one the code writes: a
// string literal in svc-cloud's telemetry or svc-edge's metrics (which
// writes the Go runtime's and process's under the Prometheus client's
// names, a subset of the cloud's), a histogram's _bucket, _sum and _count
// of one, or up, which Prometheus adds to every target.
func seriesInCode(t *testing.T) func(string) bool {
	t.Helper()
	literal := regexp.MustCompile(`"((?:svc_(?:cloud|edge)_|go_|process_)[a-z0-9_]+)"`)
	names := map[string]bool{"up": true}
	var files []string
	for _, pattern := range []string{"../../../cloud/telemetry/*.go", "../../../edge/*metrics*.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 3 {
		t.Fatalf("found only %v: where are svc-cloud's telemetry and svc-edge's metrics?", files)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllStringSubmatch(string(b), -1) {
			names[m[1]] = true
		}
	}
	return func(n string) bool {
		if names[n] {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(n, suffix); ok && names[base] {
				return true
			}
		}
		return false
	}
}
