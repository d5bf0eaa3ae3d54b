package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// dashboard is the part of a Grafana dashboard's JSON model the check
// reads: its template variables and its panels' queries and layout.
type dashboard struct {
	Title      string `json:"title"`
	Schema     int    `json:"schemaVersion"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel `json:"panels"`
}

type variable struct {
	Type       string `json:"type"`
	Name       string `json:"name"`
	Definition string `json:"definition"`
	AllValue   string `json:"allValue"`
	Multi      bool   `json:"multi"`
	IncludeAll bool   `json:"includeAll"`
}

type panel struct {
	ID          int    `json:"id"`
	Type        string `json:"type"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Datasource  *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct {
		H int `json:"h"`
		W int `json:"w"`
		X int `json:"x"`
		Y int `json:"y"`
	} `json:"gridPos"`
	FieldConfig struct {
		Defaults struct {
			Unit     string `json:"unit"`
			Mappings []struct {
				Type    string `json:"type"`
				Options map[string]struct {
					Text string `json:"text"`
				} `json:"options"`
			} `json:"mappings"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Options struct {
		ReduceOptions struct {
			Fields string `json:"fields"`
		} `json:"reduceOptions"`
	} `json:"options"`
	Transformations []struct {
		ID      string `json:"id"`
		Options struct {
			RenameByName  map[string]string `json:"renameByName"`
			ExcludeByName map[string]bool   `json:"excludeByName"`
		} `json:"options"`
	} `json:"transformations"`
	Targets []target `json:"targets"`
	// Panels are a collapsed row's panels.
	Panels []panel `json:"panels"`
}

// mapping is the text a value mapping gives v, as a stat panel shows it.
func (p panel) mapping(v float64) (string, bool) {
	for _, m := range p.FieldConfig.Defaults.Mappings {
		if m.Type != "value" {
			continue
		}
		if o, ok := m.Options[strconv.FormatFloat(v, 'f', -1, 64)]; ok && o.Text != "" {
			return o.Text, true
		}
	}
	return "", false
}

type target struct {
	RefID        string `json:"refId"`
	Expr         string `json:"expr"`
	LegendFormat string `json:"legendFormat"`
	Instant      bool   `json:"instant"`
	Datasource   *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
}

func loadDashboard(path string) (*dashboard, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: not a dashboard's JSON: %w", path, err)
	}
	if len(d.Panels) == 0 {
		return nil, fmt.Errorf("%s: no panels", path)
	}
	return &d, nil
}

// allPanels is every panel, those of collapsed rows included, rows left
// out.
func (d *dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			out = append(out, p)
		}
	}
	walk(d.Panels)
	return out
}

// labelValuesRe matches Grafana's Prometheus variable query
// label_values(SELECTOR, LABEL).
var labelValuesRe = regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// parseLabelValues splits a label_values(SELECTOR, LABEL) query; the
// one-argument form (every series) is not used by the dashboard.
func parseLabelValues(def string) (selector, label string, err error) {
	m := labelValuesRe.FindStringSubmatch(def)
	if m == nil {
		return "", "", fmt.Errorf("%q: want label_values(SELECTOR, LABEL)", def)
	}
	return m[1], m[2], nil
}

// varRe matches a variable reference as Grafana writes them: $name or
// ${name} (the name runs to the end of the word, so $edge does not match
// the start of $edge_job).
var varRe = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}|\$([A-Za-z0-9_]+)`)

// interpolate replaces the variables in s with their values; an unknown
// variable is an error, as Grafana would send it to Prometheus verbatim.
func interpolate(s string, values map[string]string) (string, error) {
	var missing []string
	out := varRe.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRe.FindStringSubmatch(ref)
		name := m[1] + m[2]
		v, ok := values[name]
		if !ok {
			missing = append(missing, name)
			return ref
		}
		return v
	})
	if len(missing) > 0 {
		return out, fmt.Errorf("unknown variable %s in %q", strings.Join(missing, ", "), s)
	}
	return out, nil
}

// regexSpecial is what Grafana escapes in a value it puts into a
// Prometheus regex matcher, with a doubled backslash: the regex is
// inside a PromQL string, where a backslash is written \\.
var regexSpecial = regexp.MustCompile(`[\\^$*+?.()|{}\[\]]`)

// allValue is what Grafana substitutes for a multi-value variable with
// every value selected: its custom allValue, else the values escaped and
// joined into one alternation.
func (v variable) allValueFor(values []string) string {
	if v.AllValue != "" {
		return v.AllValue
	}
	esc := make([]string, len(values))
	for i, s := range values {
		esc[i] = regexSpecial.ReplaceAllStringFunc(s, func(c string) string { return `\\` + c })
	}
	slices.Sort(esc)
	if len(esc) == 1 {
		return esc[0]
	}
	return "(" + strings.Join(esc, "|") + ")"
}

// seriesNameRe matches the series names the dashboard's queries use:
// svc-cloud's and svc-edge's own, the Go runtime's and process's, and up.
var seriesNameRe = regexp.MustCompile(`\b(?:svc_(?:cloud|edge)_[a-z0-9_]+|go_[a-z0-9_]+|process_[a-z0-9_]+|up)\b`)

// metricNames are the series names in a query, each once.
func metricNames(expr string) []string {
	var out []string
	for _, m := range seriesNameRe.FindAllString(expr, -1) {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}
