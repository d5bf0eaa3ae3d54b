package dynsectest

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// Wait bounds every wait of a Client for the broker.
const Wait = 10 * time.Second

// Client is a test's MQTT 3.1.1 connection, with what it receives and
// whether the broker closed it.
type Client struct {
	paho.Client
	Msgs chan paho.Message // every message received
	lost chan struct{}     // closed when the connection is lost
}

// DialOptions are a Client's credentials, client ID and last will (QoS 1,
// payload "will"; none when WillTopic is empty).
type DialOptions struct {
	Username, Password, ClientID, WillTopic string
}

// Dial connects to url with a clean session and no reconnection, and
// disconnects when t ends. A refused connection is an error.
func Dial(t testing.TB, url string, o DialOptions) (*Client, error) {
	t.Helper()
	c := &Client{Msgs: make(chan paho.Message, 100), lost: make(chan struct{})}
	opts := paho.NewClientOptions().AddBroker(url).SetClientID(o.ClientID).SetUsername(o.Username).SetPassword(o.Password).
		SetProtocolVersion(4).SetCleanSession(true).SetAutoReconnect(false).SetConnectRetry(false).SetConnectTimeout(Wait).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) { c.Msgs <- m }).
		SetConnectionLostHandler(func(paho.Client, error) { close(c.lost) })
	if o.WillTopic != "" {
		opts.SetWill(o.WillTopic, "will", 1, false)
	}
	c.Client = paho.NewClient(opts)
	tok := c.Connect()
	if !tok.WaitTimeout(Wait) {
		return nil, errors.New("no CONNACK")
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Disconnect(0) })
	return c, nil
}

// MustDial is Dial that fails t when the connection is refused.
func MustDial(t testing.TB, url string, o DialOptions) *Client {
	t.Helper()
	c, err := Dial(t, url, o)
	if err != nil {
		t.Fatalf("connect as %s: %v", o.Username, err)
	}
	return c
}

// Sub subscribes to filter at QoS 1 and returns the SUBACK's return code
// for it: 1 granted, 0x80 refused.
func (c *Client) Sub(t testing.TB, filter string) byte {
	t.Helper()
	tok := c.Subscribe(filter, 1, nil)
	if !tok.WaitTimeout(Wait) || tok.Error() != nil {
		t.Fatalf("subscribe to %s: %v", filter, tok.Error())
	}
	key := filter
	if rest, ok := strings.CutPrefix(filter, "$share/"); ok {
		_, key, _ = strings.Cut(rest, "/") // paho's Subscribe keys its result so
	}
	return tok.(*paho.SubscribeToken).Result()[key]
}

// Pub publishes payload to topic at QoS 1 and waits for the PUBACK
// (which Mosquitto sends for a refused publication too).
func (c *Client) Pub(t testing.TB, topic, payload string) {
	t.Helper()
	tok := c.Publish(topic, 1, false, payload)
	if !tok.WaitTimeout(Wait) || tok.Error() != nil {
		t.Fatalf("publish to %s: %v", topic, tok.Error())
	}
}

// Next returns the next message received, failing t after Wait.
func (c *Client) Next(t testing.TB) paho.Message {
	t.Helper()
	select {
	case m := <-c.Msgs:
		return m
	case <-time.After(Wait):
		t.Fatal("no message")
		return nil
	}
}

// Lost is closed once the connection is lost (the broker closed it).
func (c *Client) Lost() <-chan struct{} { return c.lost }

// WaitLost waits until the connection is lost, failing t after Wait.
func (c *Client) WaitLost(t testing.TB) {
	t.Helper()
	select {
	case <-c.lost:
	case <-time.After(Wait):
		t.Fatal("the broker did not disconnect the client")
	}
}

// Command sends the plugin a request as mosquitto_ctrl would, with its
// admin client, and returns the plugin's answer: commands is the JSON
// array of commands, e.g. `[{"command":"createClient","username":"u"}]`.
func (b *Broker) Command(t testing.TB, commands string) string {
	t.Helper()
	c := MustDial(t, b.URL, DialOptions{Username: Admin, Password: b.AdminPassword, ClientID: "dynsectest-" + rand.Text()[:8]})
	defer c.Disconnect(0)
	if code := c.Sub(t, "$CONTROL/dynamic-security/v1/response"); code != 1 {
		t.Fatalf("subscribe to the plugin's answers: %#x", code)
	}
	c.Pub(t, "$CONTROL/dynamic-security/v1", `{"commands":`+commands+`}`)
	return string(c.Next(t).Payload())
}
