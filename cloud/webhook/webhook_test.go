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
