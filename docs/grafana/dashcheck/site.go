package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/shared/freeport"
)

// site is make run's pair: svc-cloud serve --demo with its embedded
// broker, and one svc-edge enrolled by code for the demo's first site.
type site struct {
	cloud, edge *proc
	edgeBin     string
	dir         string
	api         string // http://127.0.0.1:PORT/v1
	metricsAddr string // the cloud's admin listener
	edgeAddr    string // the edge's local API
	key         string // the demo's test-mode secret key
	siteID      string // the edge's site
	gates       []string
}

func (s *site) stop(out io.Writer) {
	for _, p := range []*proc{s.edge, s.cloud} {
		if p != nil {
			p.stop()
			fmt.Fprintf(out, "stopped %s, pid %d\n", p.name, p.cmd.Process.Pid)
		}
	}
}

// startSite starts the cloud, enrols the edge as make run does (svc-edge
// enrol shows a code, svc-cloud edges claim reads it from the edge's
// status page and claims it), and runs the edge with simulated relays.
func startSite(ctx context.Context, o options, dir string, out io.Writer) (*site, error) {
	ports, err := freeport.Pick(6)
	if err != nil {
		return nil, err
	}
	reader, err := freeport.Run(4)
	if err != nil {
		return nil, err
	}
	addr := func(i int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i])) }
	data := filepath.Join(dir, "data")
	s := &site{edgeBin: o.edge, dir: dir, api: "http://" + addr(0) + "/v1", metricsAddr: addr(1), edgeAddr: addr(4)}
	s.cloud, err = start(dir, "svc-cloud", o.cloud, "serve", "--data", data, "--demo", "--webhooks-allow-loopback",
		"--addr", addr(0), "--metrics-listen", addr(1), "--mqtt-listen", addr(2), "--mqtt-tls-listen", addr(3))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "started svc-cloud, pid %d: API %s, metrics %s\n", s.cloud.cmd.Process.Pid, s.api, s.metricsAddr)
	if err := waitFor(ctx, "svc-cloud ready", time.Minute, s.cloud, func() bool { return httpOK("http://" + s.metricsAddr + "/readyz") }); err != nil {
		return s, err
	}

	cfgPath := filepath.Join(data, "edge.json")
	enrol, err := start(dir, "svc-edge-enrol", o.edge, "enrol", "--cloud", "http://"+addr(0), "--data", filepath.Join(data, "edge"),
		"--config", cfgPath, "--listen", s.edgeAddr, "--kiosk-listen", addr(5), "--reader-port", strconv.Itoa(reader))
	if err != nil {
		return s, err
	}
	defer enrol.stop() // it exits by itself once enrolled
	claim := exec.CommandContext(ctx, o.cloud, "edges", "claim", "--appliance", "http://"+s.edgeAddr, "--api", "http://"+addr(0),
		"--data", data, "--name", "Demo edge")
	if b, err := claim.CombinedOutput(); err != nil {
		return s, fmt.Errorf("svc-cloud edges claim: %v\n%s\n%s", err, b, enrol.tail())
	}
	if err := waitFor(ctx, "svc-edge enrolled", time.Minute, nil, func() bool { return enrol.exited() }); err != nil {
		return s, err
	}
	if enrol.err != nil {
		return s, fmt.Errorf("svc-edge enrol: %v\n%s", enrol.err, enrol.tail())
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return s, err
	}
	s.siteID = cfg.Site.SiteID
	for _, g := range cfg.Gates {
		s.gates = append(s.gates, g.ID)
	}
	if len(s.gates) == 0 {
		return s, fmt.Errorf("%s: the demo edge has no gates", cfgPath)
	}
	if s.key, err = demoKey(filepath.Join(data, "demo.json")); err != nil {
		return s, err
	}

	s.edge, err = start(dir, "svc-edge", o.edge, "run", "--config", cfgPath, "--simulate")
	if err != nil {
		return s, err
	}
	fmt.Fprintf(out, "started svc-edge, pid %d: local API %s, gates %s\n", s.edge.cmd.Process.Pid, s.edgeAddr, strings.Join(s.gates, ", "))
	err = waitFor(ctx, "svc-edge connected to the broker", time.Minute, s.edge, func() bool {
		b, err := s.fetch(http.MethodGet, "http://"+s.edgeAddr+"/metrics", nil, "", nil)
		return err == nil && bytes.Contains(b, []byte("\nsvc_edge_broker_connected 1\n"))
	})
	return s, err
}

// demoKey is the test-mode secret key svc-cloud serve --demo wrote.
func demoKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var keys struct {
		SecretTest string `json:"secret_test"`
	}
	if err := json.Unmarshal(b, &keys); err != nil || keys.SecretTest == "" {
		return "", fmt.Errorf("%s: no secret_test key (%v)", path, err)
	}
	return keys.SecretTest, nil
}

// fetch sends a request and returns the body of a 2xx answer; with want
// set, want(status) decides instead.
func (s *site) fetch(method, u string, body []byte, idemKey string, want func(int) bool) ([]byte, error) {
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(u, s.api) {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}
	if body != nil {
		// The API takes JSON; the edge's scan takes the token as text.
		ct := "text/plain; charset=utf-8"
		if strings.HasPrefix(u, s.api) {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	ok := resp.StatusCode/100 == 2
	if want != nil {
		ok = want(resp.StatusCode)
	}
	if !ok {
		return b, fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, bytes.TrimSpace(b))
	}
	return b, nil
}

func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func status(code int) func(int) bool { return func(c int) bool { return c == code } }

// counts are what traffic sent, for the report.
type counts struct{ requests, scans, visits int }

func (c counts) String() string {
	return fmt.Sprintf("%d API requests, %d gate scans (%d visitors' passes)", c.requests, c.scans, c.visits)
}

// traffic sends, once a second for d, what a site's day sends: reads,
// a request for a visit that does not exist (404), and a gate scan of a
// person's pass (a punch, then passages) and of a token that is not one;
// every fifth second a new visit (see visit), and the last one's pass
// scanned twice (admitted, then refused as already in).
func (s *site) traffic(ctx context.Context, d time.Duration) (counts, error) {
	var c counts
	api := func(method, path string, body []byte, key string, want func(int) bool) ([]byte, error) {
		c.requests++
		return s.fetch(method, s.api+path, body, key, want)
	}
	scan := func(gate, token string) error {
		c.scans++
		_, err := s.fetch(http.MethodPost, "http://"+s.edgeAddr+"/gates/"+gate+"/scan", []byte(token), "", nil)
		return err
	}
	b, err := api(http.MethodGet, "/people?limit=1", nil, "", nil)
	if err != nil {
		return c, err
	}
	var people struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &people); err != nil || len(people.Data) == 0 {
		return c, fmt.Errorf("GET /people: no person to host visits (%v)", err)
	}
	host := people.Data[0].ID
	b, err = api(http.MethodGet, "/people/"+host+"/pass", nil, "", nil)
	if err != nil {
		return c, err
	}
	var pass struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(b, &pass); err != nil || pass.Token == "" {
		return c, fmt.Errorf("GET /people/%s/pass: no token (%v)", host, err)
	}

	var pending string // a visitor's pass, scanned at the next visit
	deadline := time.Now().Add(d)
	for i := 0; time.Now().Before(deadline); i++ {
		gate := s.gates[i%len(s.gates)]
		for _, path := range []string{"/teams?limit=3", "/sites?limit=3", "/events?limit=5"} {
			if _, err := api(http.MethodGet, path, nil, "", nil); err != nil {
				return c, err
			}
		}
		if _, err := api(http.MethodGet, "/visits/visit_01jd0m7x2ya1b2c3d4e5f6g7h8", nil, "", status(http.StatusNotFound)); err != nil {
			return c, err
		}
		if err := scan(gate, pass.Token); err != nil {
			return c, err
		}
		if err := scan(gate, "not-a-pass"); err != nil {
			return c, err
		}
		if i%5 == 0 {
			// The last visit's pass, made 5 s ago: its visit has reached
			// the edge's cache through the feed by now.
			if pending != "" {
				for range 2 {
					if err := scan(gate, pending); err != nil {
						return c, err
					}
				}
				c.visits++
			}
			if pending, err = s.visit(ctx, api, host, i); err != nil {
				return c, err
			}
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return c, err
		}
	}
	return c, nil
}

type apiFunc func(method, path string, body []byte, key string, want func(int) bool) ([]byte, error)

// visit makes a visit as the README's walk-through does (POST /visits),
// replays the POST with its Idempotency-Key and reuses the key for
// another body (422), and returns its pass's token, decoded from the
// pass's PNG with svc-edge qr decode.
func (s *site) visit(ctx context.Context, api apiFunc, host string, i int) (string, error) {
	visitor := func(name string) []byte {
		b, _ := json.Marshal(map[string]any{"site_id": s.siteID, "host_id": host, "type": "meeting",
			"expected_at": time.Now().Add(5 * time.Minute).UTC().Format("2006-01-02T15:04:00Z"),
			"visitor":     map[string]string{"name": name, "email": fmt.Sprintf("visitor.%d.%d@example.org", time.Now().UnixNano(), i)}})
		return b
	}
	body := visitor(fmt.Sprintf("Visitor %d", i))
	key := newKey()
	b, err := api(http.MethodPost, "/visits", body, key, nil)
	if err != nil {
		return "", err
	}
	if _, err := api(http.MethodPost, "/visits", body, key, nil); err != nil { // replayed
		return "", err
	}
	if _, err := api(http.MethodPost, "/visits", visitor("Someone Else"), key, status(http.StatusUnprocessableEntity)); err != nil { // key_reused
		return "", err
	}
	var v struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.ID == "" {
		return "", fmt.Errorf("POST /visits: no id in %s", b)
	}
	png, err := api(http.MethodGet, "/visits/"+v.ID+"/pass.png", nil, "", nil)
	if err != nil {
		return "", err
	}
	f := filepath.Join(s.dir, "pass.png")
	if err := os.WriteFile(f, png, 0o644); err != nil {
		return "", err
	}
	tok, err := exec.CommandContext(ctx, s.edgeBin, "qr", "decode", f).Output()
	if err != nil {
		return "", fmt.Errorf("svc-edge qr decode: %w", err)
	}
	return strings.TrimSpace(string(tok)), nil
}
