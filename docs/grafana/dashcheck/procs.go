package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/svc-vms/svc/shared/freeport"
)

// proc is a process the check started; stop ends it by its PID.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func start(dir, name, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process, and SIGKILL if it has not exited
// 10 s later.
func (p *proc) stop() {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail is the end of the process's log, for an error message.
func (p *proc) tail() string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return p.name + "'s log (" + p.log + "):\n  " + strings.Join(lines, "\n  ")
}

// waitFor polls ok every 200 ms until it answers true, the process it
// waits on exits, or the deadline passes.
func waitFor(ctx context.Context, what string, within time.Duration, p *proc, ok func() bool) error {
	deadline := time.Now().Add(within)
	for {
		if ok() {
			return nil
		}
		if p != nil && p.exited() {
			return fmt.Errorf("%s: %s exited (%v)\n%s", what, p.name, p.err, p.tail())
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("%s: not within %v", what, within)
			if p != nil {
				msg += "\n" + p.tail()
			}
			return errors.New(msg)
		}
		if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

var client = &http.Client{Timeout: 10 * time.Second}

func httpOK(u string) bool {
	resp, err := client.Get(u)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// prometheus is the Prometheus server the check runs, and a client of
// its HTTP API.
type prometheus struct {
	*proc
	base string
}

func (p *prometheus) stop(out io.Writer) {
	p.proc.stop()
	fmt.Fprintln(out, "stopped prometheus, pid", p.cmd.Process.Pid)
}

// startPrometheus runs Prometheus with a configuration that scrapes the
// cloud's admin listener as job svc-cloud and the edge's local API as
// job svc-edge, as an operator's would.
func startPrometheus(ctx context.Context, o options, dir string, s *site) (*prometheus, error) {
	ports, err := freeport.Pick(1)
	if err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  evaluation_interval: %[1]s
scrape_configs:
  - job_name: svc-cloud
    static_configs:
      - targets: [%[2]q]
  - job_name: svc-edge
    static_configs:
      - targets: [%[3]q]
`, promDuration(o.interval), s.metricsAddr, s.edgeAddr)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	p, err := start(dir, "prometheus", o.prometheus, "--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, "prometheus-data"), "--web.listen-address="+addr, "--log.level=warn")
	if err != nil {
		return nil, err
	}
	prom := &prometheus{proc: p, base: "http://" + addr}
	return prom, waitFor(ctx, "Prometheus ready", 30*time.Second, p, func() bool { return httpOK(prom.base + "/-/ready") })
}

// sample is one series of a query's answer: its labels and its points
// (one for an instant query).
type sample struct {
	Metric map[string]string
	Points [][2]float64 // unix seconds, value
}

// apiResponse is Prometheus's HTTP API envelope.
type apiResponse struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
}

func (p *prometheus) get(ctx context.Context, path string, q url.Values) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r apiResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %s, not Prometheus's JSON: %w", path, resp.Status, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	return r.Data, nil
}

// labelValues answers Grafana's label_values(selector, label).
func (p *prometheus) labelValues(ctx context.Context, selector, label string) ([]string, error) {
	data, err := p.get(ctx, "/api/v1/label/"+url.PathEscape(label)+"/values", url.Values{"match[]": {selector}})
	if err != nil {
		return nil, err
	}
	var vals []string
	return vals, json.Unmarshal(data, &vals)
}

// query is an instant query at t.
func (p *prometheus) query(ctx context.Context, expr string, t time.Time) ([]sample, error) {
	data, err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}, "time": {unix(t)}})
	if err != nil {
		return nil, err
	}
	return parseResult(data)
}

// queryRange is a range query from start to end, a point every step.
func (p *prometheus) queryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]sample, error) {
	data, err := p.get(ctx, "/api/v1/query_range", url.Values{"query": {expr}, "start": {unix(start)}, "end": {unix(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}})
	if err != nil {
		return nil, err
	}
	return parseResult(data)
}

func unix(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// parseResult reads a vector, matrix or scalar answer. Values are
// strings in the API ("NaN" and "+Inf" included).
func parseResult(data json.RawMessage) ([]sample, error) {
	var r struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	type point [2]any
	switch r.ResultType {
	case "vector", "matrix":
		var series []struct {
			Metric map[string]string `json:"metric"`
			Value  *point            `json:"value"`
			Values []point           `json:"values"`
		}
		if err := json.Unmarshal(r.Result, &series); err != nil {
			return nil, err
		}
		out := make([]sample, 0, len(series))
		for _, s := range series {
			pts := s.Values
			if s.Value != nil {
				pts = []point{*s.Value}
			}
			sm := sample{Metric: s.Metric}
			for _, pt := range pts {
				v, err := pointValue(pt[1])
				if err != nil {
					return nil, err
				}
				ts, _ := pt[0].(float64)
				sm.Points = append(sm.Points, [2]float64{ts, v})
			}
			out = append(out, sm)
		}
		return out, nil
	case "scalar":
		var pt point
		if err := json.Unmarshal(r.Result, &pt); err != nil {
			return nil, err
		}
		v, err := pointValue(pt[1])
		if err != nil {
			return nil, err
		}
		ts, _ := pt[0].(float64)
		return []sample{{Metric: map[string]string{}, Points: [][2]float64{{ts, v}}}}, nil
	}
	return nil, fmt.Errorf("result type %q", r.ResultType)
}

func pointValue(v any) (float64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("value %v: not a string", v)
	}
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64)
}
