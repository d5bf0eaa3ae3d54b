package webhook_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/webhook"
)

// Sign reproduces the Standard Webhooks project's own signing vector.
func TestSign_MatchesTheStandardWebhooksVector(t *testing.T) {
	// A copy of ../shared/testdata/standard-webhooks/vector.json.
	raw, err := os.ReadFile(filepath.Join("testdata", "vector.json"))
	require.NoError(t, err)
	var v map[string]string
	require.NoError(t, json.Unmarshal(raw, &v))
	sec, err := strconv.ParseInt(v["webhook-timestamp"], 10, 64)
	require.NoError(t, err)
	got, err := webhook.Sign([]string{v["secret"]}, v["webhook-id"], time.Unix(sec, 0), []byte(v["body"]))
	require.NoError(t, err)
	require.Equal(t, v["webhook-signature"], got)

	two, err := webhook.Sign([]string{v["secret"], v["secret"]}, v["webhook-id"], time.Unix(sec, 0), []byte(v["body"]))
	require.NoError(t, err)
	require.Equal(t, got+" "+got, two, "one signature per secret, space-separated")

	_, err = webhook.Sign([]string{"whsec_not base64!"}, "id", time.Unix(0, 0), nil)
	require.Error(t, err)
}

// The client checks the address it connects to, not only the URL: a
// loopback address is refused unless the policy allows it for test mode,
// and never for live mode.
func TestClient_RefusesForbiddenAddressesAtConnect(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	do := func(c *http.Client, mode cloud.Mode) error {
		req, err := http.NewRequestWithContext(webhook.WithMode(context.Background(), mode), http.MethodPost, srv.URL, nil)
		require.NoError(t, err)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	strict := webhook.NewClient(cloud.WebhookPolicy{})
	require.ErrorContains(t, do(strict, cloud.ModeTest), "loopback")
	require.ErrorContains(t, do(strict, cloud.ModeLive), "loopback")
	loose := webhook.NewClient(cloud.WebhookPolicy{AllowLoopbackInTest: true})
	require.NoError(t, do(loose, cloud.ModeTest))
	require.ErrorContains(t, do(loose, cloud.ModeLive), "loopback")
}

// The same policy holds when connecting: an address that carries a loopback
// IPv4 address in another form is refused before any connection, even in
// a test mode that may use loopback itself, and an IPv4-mapped loopback
// address is loopback.
func TestClient_RefusesEmbeddedIPv4FormsAtConnect(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	do := func(c *http.Client, mode cloud.Mode, host string) error {
		req, err := http.NewRequestWithContext(webhook.WithMode(context.Background(), mode), http.MethodPost, "http://"+net.JoinHostPort(host, port)+"/", nil)
		require.NoError(t, err)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	loose := webhook.NewClient(cloud.WebhookPolicy{AllowLoopbackInTest: true})
	for _, host := range []string{"::127.0.0.1", "::ffff:0:7f00:1", "64:ff9b::7f00:1", "2002:7f00:1::1", "2001:0:7f00:1::f7f7:f7f7"} {
		err := do(loose, cloud.ModeTest, host)
		require.ErrorContains(t, err, "refused", host)
		require.ErrorContains(t, err, "127.0.0.1 is a loopback address", host)
	}
	require.NoError(t, do(loose, cloud.ModeTest, "::ffff:127.0.0.1"), "IPv4-mapped loopback is loopback")
	require.ErrorContains(t, do(loose, cloud.ModeLive, "::ffff:127.0.0.1"), "loopback")
}

// Observe is told each attempt's result: by status class for a response,
// refused for a URL or an address the policy does not allow, timeout,
// and error for the rest; the attempt's recorded error keeps its words.
func TestDispatcher_ObservesResults(t *testing.T) {
	handler := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(func() { close(release) }) // first: Close waits for the handler
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	_, port, err := net.SplitHostPort(slow.Listener.Addr().String())
	require.NoError(t, err)

	for _, c := range []struct {
		name   string
		policy cloud.WebhookPolicy
		mode   cloud.Mode
		url    string
		result string
		err    string
	}{
		{"2xx", loose, cloud.ModeTest, handler(http.StatusNoContent), webhook.ResultSucceeded, ""},
		{"3xx", loose, cloud.ModeTest, handler(http.StatusFound), webhook.ResultStatus3xx, ""},
		{"4xx", loose, cloud.ModeTest, handler(http.StatusGone), webhook.ResultStatus4xx, ""},
		{"5xx", loose, cloud.ModeTest, handler(http.StatusServiceUnavailable), webhook.ResultStatus5xx, ""},
		{"URL refused", loose, cloud.ModeLive, handler(http.StatusNoContent), webhook.ResultRefused, "url refused: "},
		// The URL passes the service's policy; the client's stricter one
		// refuses the address it resolves to, when it connects.
		{"address refused", loose, cloud.ModeTest, "http://localhost:" + port + "/", webhook.ResultRefused, "refused: "},
		{"timeout", loose, cloud.ModeTest, slow.URL, webhook.ResultTimeout, "no response within"},
		{"connection refused", loose, cloud.ModeTest, closedURL, webhook.ResultError, "refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc := cloud.NewService(nil, time.Now)
			svc.SetWebhookPolicy(c.policy)
			var got []string
			client := webhook.NewClient(c.policy)
			if c.name == "address refused" {
				client = webhook.NewClient(cloud.WebhookPolicy{})
			}
			d := &webhook.Dispatcher{Service: svc, Client: client, Timeout: 200 * time.Millisecond,
				Body:    func(cloud.Event) ([]byte, error) { return []byte(`{}`), nil },
				Observe: func(result string) { got = append(got, result) }}
			j := cloud.WebhookJob{Endpoint: cloud.WebhookEndpoint{ID: "we_1", URL: c.url, Secret: cloud.NewWebhookSecret(),
				Tenant: cloud.Tenant{OrgID: "org_1", Mode: c.mode}}, Event: cloud.Event{ID: "evt_1"}}
			r := d.Send(t.Context(), j)
			require.Equal(t, []string{c.result}, got)
			require.Contains(t, webhook.Results, c.result)
			if c.err != "" {
				require.Contains(t, r.Error, c.err)
			}
		})
	}
}

var loose = cloud.WebhookPolicy{AllowLoopbackInTest: true}
