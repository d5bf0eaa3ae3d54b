package main

import (
	"context"
	"fmt"
	"html"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The page is laid out as Grafana lays out a dashboard: 24 columns, a
// grid unit of 30 px in height, panels where their gridPos puts them.
const (
	pageWidth  = 1600
	gridUnit   = 30
	gap        = 6
	headHeight = 64
)

// palette is Grafana's classic series palette.
var palette = []string{"#7EB26D", "#EAB839", "#6ED0E0", "#EF843C", "#E24D42", "#1F78C1", "#BA43A9", "#705DA0",
	"#508642", "#CCA300", "#447EBC", "#C15C17", "#890F02", "#0A437C", "#6D1F62", "#584477"}

// screenshot draws every panel of the dashboard from Prometheus (range
// queries over the scrape for time series, the instant answers for stats
// and tables) into an HTML page of plain SVG, and has chromium take a PNG
// of it. It is not Grafana's rendering: the page says so.
func screenshot(ctx context.Context, o options, dir string, d *dashboard, prom *prometheus, results []result,
	values map[string]string, start, end time.Time) error {
	chromium := o.chromium
	if chromium == "" {
		var err error
		if chromium, err = exec.LookPath("chromium"); err != nil {
			return fmt.Errorf("chromium is not on PATH (apt-get install chromium), or name it with -chromium")
		}
	}
	byPanel := map[int][]result{}
	for _, r := range results {
		byPanel[r.panel.ID] = append(byPanel[r.panel.ID], r)
	}
	var b strings.Builder
	bottom := 0
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><style>
body{margin:0;background:#111217;color:#ccccdc;font:12px/1.3 "DejaVu Sans",Arial,sans-serif;width:` + strconv.Itoa(pageWidth) + `px}
.head{height:` + strconv.Itoa(headHeight-10) + `px;padding:8px 12px 0}
.head h1{font-size:18px;margin:0 0 4px;color:#fff;font-weight:500}
.head p{margin:0;color:#8e8e9e}
.grid{position:relative}
.p{position:absolute;background:#181b1f;border:1px solid #2c3235;border-radius:2px;box-sizing:border-box;padding:4px 8px;overflow:hidden}
.p h2{font-size:12px;font-weight:500;margin:0 0 2px;color:#ccccdc;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.row{position:absolute;font-size:14px;color:#fff;font-weight:500;padding:6px 4px;box-sizing:border-box}
.stat{font-size:30px;font-weight:500;text-align:center;margin-top:8px}
.legend{display:flex;flex-wrap:wrap;gap:0 12px;font-size:10px;color:#ccccdc}
.legend span{white-space:nowrap}
.legend i{display:inline-block;width:10px;height:3px;margin:0 4px 3px 0;vertical-align:middle}
.none{color:#8e8e9e;text-align:center;margin-top:20px}
table{border-collapse:collapse;width:100%;font-size:11px}
th{text-align:left;color:#6e9fff;font-weight:500;border-bottom:1px solid #2c3235;padding:2px 6px}
td{padding:2px 6px;border-bottom:1px solid #22252b}
</style></head><body>`)
	fmt.Fprintf(&b, `<div class="head"><h1>%s</h1><p>docs/grafana/svc.json's panels drawn by docs/grafana/dashcheck (plain SVG) from Prometheus query results: a %v scrape of make run's svc-cloud and svc-edge, %s to %s UTC. Not rendered by Grafana, which cannot be installed here.</p></div><div class="grid">`,
		html.EscapeString(d.Title), end.Sub(start).Round(time.Second), start.UTC().Format("15:04:05"), end.UTC().Format("15:04:05"))
	colW := float64(pageWidth) / 24
	for _, p := range d.Panels {
		left := int(float64(p.GridPos.X) * colW)
		top := p.GridPos.Y * gridUnit
		w := int(float64(p.GridPos.W)*colW) - gap
		h := p.GridPos.H*gridUnit - gap
		bottom = max(bottom, top+h+gap)
		if p.Type == "row" {
			fmt.Fprintf(&b, `<div class="row" style="left:%dpx;top:%dpx;width:%dpx">%s</div>`, left, top, w, html.EscapeString(p.Title))
			continue
		}
		fmt.Fprintf(&b, `<div class="p" style="left:%dpx;top:%dpx;width:%dpx;height:%dpx"><h2>%s</h2>`, left, top, w, h, html.EscapeString(p.Title))
		var err error
		switch p.Type {
		case "timeseries":
			err = drawTimeseries(ctx, &b, p, byPanel[p.ID], prom, start, end, o.interval, w-16, h-26)
		case "stat":
			drawStat(ctx, &b, p, byPanel[p.ID], prom, end)
		case "table":
			err = drawTable(ctx, &b, p, byPanel[p.ID], prom, end)
		default:
			fmt.Fprintf(&b, `<div class="none">panel type %s not drawn</div>`, html.EscapeString(p.Type))
		}
		if err != nil {
			return fmt.Errorf("panel %q: %w", p.Title, err)
		}
		b.WriteString(`</div>`)
	}
	b.WriteString(`</div></body></html>`)

	page := filepath.Join(dir, "dashboard.html")
	if err := os.WriteFile(page, []byte(b.String()), 0o644); err != nil {
		return err
	}
	outPath, err := filepath.Abs(o.screenshot)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(outPath), 0o755); err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	height := headHeight + bottom
	// --no-sandbox: chromium refuses to run as root without it (CI runs
	// as root); the page is one this program wrote, with no script.
	cmd := exec.CommandContext(cctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+filepath.Join(dir, "chromium"), "--force-device-scale-factor=1",
		fmt.Sprintf("--window-size=%d,%d", pageWidth, height), "--screenshot="+outPath, "file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", chromium, err, out)
	}
	if st, err := os.Stat(outPath); err != nil || st.Size() == 0 {
		return fmt.Errorf("chromium wrote no %s (%v)", outPath, err)
	}
	return nil
}

// legendRe matches {{label}} in a legend format.
var legendRe = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

// legend names a series as Grafana would with the target's legend format.
func legend(format string, m map[string]string) string {
	if format == "" || format == "__auto" {
		var parts []string
		for k, v := range m {
			if k != "__name__" {
				parts = append(parts, k+"="+strconv.Quote(v))
			}
		}
		slices.Sort(parts)
		return m["__name__"] + "{" + strings.Join(parts, ", ") + "}"
	}
	return strings.TrimSpace(legendRe.ReplaceAllStringFunc(format, func(s string) string {
		return m[legendRe.FindStringSubmatch(s)[1]]
	}))
}

type line struct {
	name   string
	points [][2]float64
}

func drawTimeseries(ctx context.Context, b *strings.Builder, p panel, rs []result, prom *prometheus,
	start, end time.Time, step time.Duration, w, h int) error {
	var lines []line
	for _, r := range rs {
		if r.err != nil {
			continue
		}
		ss, err := prom.queryRange(ctx, r.expr, start, end, step)
		if err != nil {
			return err
		}
		for _, s := range ss {
			lines = append(lines, line{name: legend(r.target.LegendFormat, s.Metric), points: s.Points})
		}
	}
	slices.SortStableFunc(lines, func(a, b line) int { return strings.Compare(a.name, b.name) })
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range lines {
		for _, pt := range l.points {
			if v := pt[1]; !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		b.WriteString(`<div class="none">No data</div>`)
		return nil
	}
	lo = min(lo, 0)
	if hi <= lo {
		hi = lo + 1
	}
	hi *= 1.05
	legendRows := min((len(lines)+2)/3, 4)
	chartH := h - legendRows*13 - 4
	const axisW, axisH = 64, 14
	plotW, plotH := float64(w-axisW), float64(chartH-axisH)
	t0, t1 := float64(start.UnixMilli())/1000, float64(end.UnixMilli())/1000
	x := func(t float64) float64 { return axisW + (t-t0)/(t1-t0)*plotW }
	y := func(v float64) float64 { return 4 + (1-(v-lo)/(hi-lo))*(plotH-4) }
	unit := p.FieldConfig.Defaults.Unit
	fmt.Fprintf(b, `<svg width="%d" height="%d" xmlns="http://www.w3.org/2000/svg" font-size="10" fill="#8e8e9e">`, w, chartH)
	for i := 0; i <= 4; i++ {
		v := lo + (hi-lo)*float64(i)/4
		fmt.Fprintf(b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#2c3235"/>`, axisW, w, y(v), y(v))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, axisW-4, y(v)+3, html.EscapeString(formatValue(v, unit)))
	}
	for i := 0; i <= 4; i++ {
		t := t0 + (t1-t0)*float64(i)/4
		anchor := "middle"
		if i == 4 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="%s">%s</text>`, x(t), chartH-2, anchor,
			time.UnixMilli(int64(t*1000)).UTC().Format("15:04:05"))
	}
	for i, l := range lines {
		color := palette[i%len(palette)]
		// A NaN or infinite value (a quantile of no requests, a sync
		// age of +Inf) breaks the line, as in Grafana.
		var seg []string
		flush := func() {
			if len(seg) == 1 {
				seg = append(seg, seg[0])
			}
			if len(seg) > 1 {
				fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`, color, strings.Join(seg, " "))
			}
			seg = seg[:0]
		}
		for _, pt := range l.points {
			if math.IsNaN(pt[1]) || math.IsInf(pt[1], 0) {
				flush()
				continue
			}
			seg = append(seg, fmt.Sprintf("%.1f,%.1f", x(pt[0]), y(pt[1])))
		}
		flush()
	}
	b.WriteString(`</svg><div class="legend">`)
	shown := min(len(lines), legendRows*3)
	for i, l := range lines[:shown] {
		fmt.Fprintf(b, `<span><i style="background:%s"></i>%s</span>`, palette[i%len(palette)], html.EscapeString(l.name))
	}
	if len(lines) > shown {
		fmt.Fprintf(b, `<span>and %d more</span>`, len(lines)-shown)
	}
	b.WriteString(`</div>`)
	return nil
}

func drawStat(ctx context.Context, b *strings.Builder, p panel, rs []result, prom *prometheus, end time.Time) {
	text := "No data"
	if len(rs) > 0 && rs[0].err == nil {
		if ss, err := prom.query(ctx, rs[0].expr, end); err == nil && len(ss) > 0 {
			if f := strings.Trim(p.Options.ReduceOptions.Fields, "/^$"); f != "" {
				text = ss[0].Metric[f]
			} else {
				v := ss[0].Points[len(ss[0].Points)-1][1]
				text = formatValue(v, p.FieldConfig.Defaults.Unit)
				if m, ok := p.mapping(v); ok {
					text = m
				}
			}
		}
	}
	fmt.Fprintf(b, `<div class="stat">%s</div>`, html.EscapeString(text))
}

// drawTable joins the instant answers of the panel's targets on their
// instance label, as the panel's merge transformation does, and names
// the columns as its organize transformation does.
func drawTable(ctx context.Context, b *strings.Builder, p panel, rs []result, prom *prometheus, end time.Time) error {
	rename, exclude := map[string]string{}, map[string]bool{}
	for _, t := range p.Transformations {
		for k, v := range t.Options.RenameByName {
			rename[k] = v
		}
		for k, v := range t.Options.ExcludeByName {
			exclude[k] = v
		}
	}
	var cols []string
	rows := map[string]map[string]string{}
	var keys []string
	addCol := func(c string) {
		if !exclude[c] && !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	for _, r := range rs {
		if r.err != nil {
			continue
		}
		ss, err := prom.query(ctx, r.expr, end)
		if err != nil {
			return err
		}
		valueCol := "Value"
		if len(rs) > 1 {
			valueCol = "Value #" + r.target.RefID
		}
		for _, s := range ss {
			k := s.Metric["instance"]
			if rows[k] == nil {
				rows[k] = map[string]string{}
				keys = append(keys, k)
			}
			for _, l := range slices.Sorted(func(yield func(string) bool) {
				for l := range s.Metric {
					if !yield(l) {
						return
					}
				}
			}) {
				addCol(l)
				rows[k][l] = s.Metric[l]
			}
			addCol(valueCol)
			rows[k][valueCol] = formatValue(s.Points[0][1], "")
		}
	}
	if len(keys) == 0 {
		b.WriteString(`<div class="none">No data</div>`)
		return nil
	}
	slices.Sort(keys)
	b.WriteString(`<table><tr>`)
	for _, c := range cols {
		name := c
		if n, ok := rename[c]; ok {
			name = n
		}
		fmt.Fprintf(b, `<th>%s</th>`, html.EscapeString(name))
	}
	b.WriteString(`</tr>`)
	for _, k := range keys {
		b.WriteString(`<tr>`)
		for _, c := range cols {
			fmt.Fprintf(b, `<td>%s</td>`, html.EscapeString(rows[k][c]))
		}
		b.WriteString(`</tr>`)
	}
	b.WriteString(`</table>`)
	return nil
}

// formatValue writes v in the panel's unit, roughly as Grafana does.
func formatValue(v float64, unit string) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	num := func(x float64) string {
		switch a := math.Abs(x); {
		case x == math.Trunc(x) && a < 1e15:
			return strconv.FormatFloat(x, 'f', 0, 64)
		case a >= 100:
			return strconv.FormatFloat(x, 'f', 0, 64)
		case a >= 10:
			return strconv.FormatFloat(x, 'f', 1, 64)
		case a >= 0.01:
			return strconv.FormatFloat(x, 'f', 2, 64)
		}
		return strconv.FormatFloat(x, 'g', 2, 64)
	}
	switch unit {
	case "bytes":
		for _, u := range []string{"B", "KiB", "MiB", "GiB"} {
			if math.Abs(v) < 1024 || u == "GiB" {
				return num(v) + " " + u
			}
			v /= 1024
		}
	case "s":
		switch a := math.Abs(v); {
		case a == 0:
			return "0 s"
		case a < 1e-3:
			return num(v*1e6) + " µs"
		case a < 1:
			return num(v*1e3) + " ms"
		case a < 120:
			return num(v) + " s"
		case a < 7200:
			return num(v/60) + " min"
		}
		return num(v/3600) + " h"
	case "percentunit":
		return num(v*100) + "%"
	case "reqps":
		return num(v) + " req/s"
	}
	return num(v)
}
