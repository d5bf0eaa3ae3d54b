package main

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-vms/svc/shared/poll"

	mqtt "github.com/eclipse/paho.mqtt.golang"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/edge/sitetest"
	"github.com/svc-vms/svc/shared/ids"
)

// TestServe_MQTTShareGroup, on the Mosquitto at SVC_TEST_MQTT_URL: serve
// with --mqtt-share-group G reads the edges' status through $share/G/...,
// so a client in group G shares the messages with it (gets some, not
// all), where with the default group it would get every one.
func TestServe_MQTTShareGroup(t *testing.T) {
	url := os.Getenv(sitetest.EnvMQTT)
	if url == "" {
		if os.Getenv(postgrestest.EnvRequire) == "1" {
			t.Fatal(sitetest.EnvMQTT + " is not set")
		}
		t.Skip(sitetest.EnvMQTT + " is not set")
	}
	group := "svc-test-" + rand.Text()[:10] // a group no other test run joins
	base, _ := startServeURL(t, t.TempDir(), "--mqtt-url", url, "--mqtt-share-group", group)
	root := strings.TrimSuffix(base, "/v1")
	// Ready once subscribed at the broker.
	waitUntil(t, 10*time.Second, func() bool {
		status, _ := fetch(t, root+"/readyz", "")
		return status == http.StatusOK
	}, "/readyz did not answer 200")

	var got atomic.Int32
	opts := mqtt.NewClientOptions().AddBroker(url).SetClientID("svc-test-" + group).SetCleanSession(true)
	c := mqtt.NewClient(opts)
	tok := c.Connect()
	require.True(t, tok.WaitTimeout(5*time.Second))
	require.NoError(t, tok.Error())
	t.Cleanup(func() { c.Disconnect(100) })
	// The filter is serve's own, as a share needs; it also matches the
	// status of edges in tests running beside this one on the same
	// broker, so only the messages on this test's topic are counted.
	const n = 20
	topic := fmt.Sprintf("svc/v1/test/%s/sites/%s/edges/%s/status", ids.New(ids.Organisation), ids.New(ids.Site), ids.New(ids.Edge))
	tok = c.Subscribe("$share/"+group+"/svc/v1/+/+/sites/+/edges/+/status", 1, func(_ mqtt.Client, m mqtt.Message) {
		if m.Topic() == topic {
			got.Add(1)
		}
	})
	require.True(t, tok.WaitTimeout(5*time.Second))
	require.NoError(t, tok.Error())

	for range n {
		tok := c.Publish(topic, 1, false, []byte(`{}`))
		require.True(t, tok.WaitTimeout(5*time.Second))
		require.NoError(t, tok.Error())
	}
	// The broker sends each message to one member of the group. A share
	// that stays below n can only be told from one still arriving by
	// waiting: up to 3 s, cut short when all n arrive (the failure).
	poll.Until(3*time.Second, 10*time.Millisecond, func() bool { return got.Load() >= n })
	require.Positive(t, got.Load(), "the test's client is in the group too")
	require.Less(t, got.Load(), int32(n), "serve took some of group %s's messages", group)
}
