// Command dashcheck checks the Grafana dashboard docs/grafana/svc.json
// against a real scrape: it starts what `make run` starts (svc-cloud
// serve --demo and one demo svc-edge, enrolled by code), on free ports in
// a temporary folder, and a Prometheus scraping both; it sends API
// requests and gate scans while Prometheus scrapes; then it evaluates
// every query of the dashboard, its variables' first, through
// Prometheus's HTTP API, and fails when one does not parse or has no data
// (a few are known to have none under `make run`, and say why). With
// -screenshot it also draws the dashboard's panels from the same
// Prometheus into a PNG with chromium: Grafana itself cannot be installed
// here (docs/decisions.md, "The Grafana dashboard (issue 19)").
//
// Run it with `make dashboard-check`. It stops only the processes it
// started.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

type options struct {
	dashboard, cloud, edge, prometheus string
	scrape, interval                   time.Duration
	screenshot, chromium               string
	keep                               bool
}

func main() {
	var o options
	flag.StringVar(&o.dashboard, "dashboard", "docs/grafana/svc.json", "the dashboard's JSON")
	flag.StringVar(&o.cloud, "cloud", ".tools/bin/svc-cloud", "the svc-cloud binary")
	flag.StringVar(&o.edge, "edge", ".tools/bin/svc-edge", "the svc-edge binary")
	flag.StringVar(&o.prometheus, "prometheus", ".tools/prometheus/usr/bin/prometheus", "the prometheus binary (make prometheus unpacks Debian's)")
	flag.DurationVar(&o.scrape, "scrape", 75*time.Second, "how long Prometheus scrapes while requests and scans run")
	flag.DurationVar(&o.interval, "interval", 5*time.Second, "Prometheus's scrape interval")
	flag.StringVar(&o.screenshot, "screenshot", "", "write a PNG of the dashboard's panels, drawn from the scrape, to this file")
	flag.StringVar(&o.chromium, "chromium", "", "the chromium binary for -screenshot (default: chromium on PATH)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary folder (logs, data, Prometheus's files)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "dashcheck: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed, err := run(ctx, o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashcheck:", err)
		os.Exit(1)
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "dashcheck: %d of the dashboard's queries failed\n", failed)
		os.Exit(1)
	}
}

// run does the check and returns how many queries failed.
func run(ctx context.Context, o options, out io.Writer) (int, error) {
	d, err := loadDashboard(o.dashboard)
	if err != nil {
		return 0, err
	}
	for _, bin := range []struct{ flag, path string }{{"-cloud", o.cloud}, {"-edge", o.edge}, {"-prometheus", o.prometheus}} {
		if st, err := os.Stat(bin.path); err != nil || st.IsDir() {
			return 0, fmt.Errorf("%s %s: not a file (make dashboard-check builds and unpacks them)", bin.flag, bin.path)
		}
	}
	if o.scrape < 4*o.interval {
		return 0, fmt.Errorf("-scrape %v: want at least four scrape intervals (%v), for rates over them", o.scrape, 4*o.interval)
	}
	dir, err := os.MkdirTemp("", "dashcheck-")
	if err != nil {
		return 0, err
	}
	if o.keep {
		fmt.Fprintln(out, "temporary folder (kept):", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	s, err := startSite(ctx, o, dir, out)
	if s != nil {
		defer s.stop(out)
	}
	if err != nil {
		return 0, err
	}
	prom, err := startPrometheus(ctx, o, dir, s)
	if prom != nil {
		defer prom.stop(out)
	}
	if err != nil {
		return 0, err
	}
	start := time.Now()
	fmt.Fprintf(out, "scraping svc-cloud (%s) and svc-edge (%s) every %v for %v, with API requests and gate scans\n",
		s.metricsAddr, s.edgeAddr, o.interval, o.scrape)
	counts, err := s.traffic(ctx, o.scrape)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(out, "sent %s\n", counts)
	// One more scrape, so the last requests are in Prometheus.
	if err := sleepCtx(ctx, o.interval+time.Second); err != nil {
		return 0, err
	}
	end := time.Now()

	// Grafana's $__rate_interval is the larger of four scrape intervals and
	// the panel's step plus one; at this scrape interval and window the
	// first is larger.
	rateInterval := promDuration(4 * o.interval)
	values, failed := resolveVariables(ctx, prom, d, out)
	values["__rate_interval"] = rateInterval
	results, n := evaluate(ctx, prom, d, values, end, out)
	failed += n
	if o.screenshot != "" {
		if err := screenshot(ctx, o, dir, d, prom, results, values, start, end); err != nil {
			return failed, fmt.Errorf("screenshot: %w", err)
		}
		fmt.Fprintln(out, "wrote", o.screenshot)
	}
	return failed, nil
}

// expectedEmpty are the series that `make run` is known not to have, and
// why: a query of only these may return no data without failing.
var expectedEmpty = map[string]string{
	"svc_cloud_db_statement_errors_total": "the SQLite store make run uses counts no statement errors (PostgreSQL only)",
	"svc_edge_scan_errors_total":          "no relay pulse or record failed and no scan was abandoned: a kind's series appears with its first error",
	"svc_cloud_feed_lag":                  "a site has a series only while its online edge is behind its feed; make run's edge keeps up",
}

// result is one query's answer at the end of the scrape.
type result struct {
	panel  panel
	target target
	expr   string // interpolated
	series int    // with a value other than NaN
	nan    int    // whose value is NaN
	err    error
}

// resolveVariables evaluates the dashboard's query variables in order
// (a variable may use those before it) and returns what Grafana would
// put in place of each with every value selected. A variable without
// values counts as a failure.
func resolveVariables(ctx context.Context, prom *prometheus, d *dashboard, out io.Writer) (map[string]string, int) {
	values := map[string]string{"datasource": "prometheus"}
	failed := 0
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		sel, label, err := parseLabelValues(v.Definition)
		if err == nil {
			sel, err = interpolate(sel, values)
		}
		var vals []string
		if err == nil {
			vals, err = prom.labelValues(ctx, sel, label)
		}
		if err == nil && len(vals) == 0 {
			err = errors.New("no values")
		}
		if err != nil {
			failed++
			fmt.Fprintf(out, "FAIL  variable $%s = %s: %v\n", v.Name, v.Definition, err)
			values[v.Name] = "^$" // matches nothing, so the panels that use it report no data too
			continue
		}
		values[v.Name] = v.allValueFor(vals)
		fmt.Fprintf(out, "ok    variable $%s = %s: %s (All: %s)\n", v.Name, v.Definition, strings.Join(vals, ", "), values[v.Name])
	}
	return values, failed
}

// evaluate runs every target of every panel as an instant query at t.
func evaluate(ctx context.Context, prom *prometheus, d *dashboard, values map[string]string, t time.Time, out io.Writer) ([]result, int) {
	var results []result
	failed, empty := 0, 0
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			r := result{panel: p, target: tg}
			r.expr, r.err = interpolate(tg.Expr, values)
			if r.err == nil {
				var v []sample
				v, r.err = prom.query(ctx, r.expr, t)
				for _, s := range v {
					if math.IsNaN(s.Points[0][1]) {
						r.nan++
					} else {
						r.series++
					}
				}
			}
			results = append(results, r)
			name := fmt.Sprintf("%q %s", p.Title, tg.RefID)
			switch {
			case r.err != nil:
				failed++
				fmt.Fprintf(out, "FAIL  %s: %v\n      %s\n", name, r.err, r.expr)
			case r.series == 0:
				if why := emptyReason(tg.Expr); why != "" {
					empty++
					fmt.Fprintf(out, "empty %s: no data, as expected: %s\n", name, why)
				} else {
					failed++
					fmt.Fprintf(out, "FAIL  %s: no data%s\n      %s\n", name, nanNote(r.nan), r.expr)
				}
			default:
				fmt.Fprintf(out, "ok    %s: %d series%s\n", name, r.series, nanNote(r.nan))
			}
		}
	}
	fmt.Fprintf(out, "%d queries: %d with data, %d without as expected, %d failed\n", len(results), len(results)-failed-empty, empty, failed)
	return results, failed
}

// emptyReason says why expr may have no data under make run, "" if it
// must have some: every series it names must be one expectedEmpty lists.
func emptyReason(expr string) string {
	var why []string
	for _, name := range metricNames(expr) {
		w, ok := expectedEmpty[name]
		if !ok {
			return ""
		}
		if !slices.Contains(why, w) {
			why = append(why, w)
		}
	}
	return strings.Join(why, "; ")
}

// nanNote tells of series whose value is NaN (a quantile or ratio of
// nothing: no request, no scan in the window), which Grafana draws as no
// point; they do not count as data.
func nanNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (and %d NaN)", n)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// promDuration writes d as PromQL does (30s, 1m30s is 90s).
func promDuration(d time.Duration) string {
	if d%time.Second != 0 {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}
