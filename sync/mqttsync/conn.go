package mqttsync

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// Connection settings both halves share.
const (
	defaultKeepAlive      = 30 * time.Second
	defaultConnectTimeout = 10 * time.Second
	defaultWriteTimeout   = 10 * time.Second
	defaultMinBackoff     = 500 * time.Millisecond
	defaultMaxBackoff     = 30 * time.Second
	inboxLimit            = 100_000
	inboxBytes            = 256 << 20 // a snapshot of 100,000 visits is about 60 MB
)

// subackFailure is the SUBACK return code of a refused subscription.
const subackFailure = 0x80

// dialConfig is one connection's settings. Each connection is a new paho
// client: auto-reconnect is off, so the half owns its retries and builds a
// fresh last will each time.
type dialConfig struct {
	url, username, password, clientID string
	tls                               *tls.Config
	cleanSession                      bool
	keepAlive, connectTimeout         time.Duration
	writeTimeout                      time.Duration
	willTopic                         string // empty: no will
	willPayload                       []byte
	onMessage                         func(message)
	onLost                            func(error)
}

// dial connects, returning once the broker accepted the connection. It
// waits for paho's connect (bounded by connectTimeout) even when ctx ends
// first, so no client is left half open.
func dial(ctx context.Context, dc dialConfig) (paho.Client, error) {
	opts := paho.NewClientOptions().
		AddBroker(dc.url).
		SetClientID(dc.clientID).
		SetUsername(dc.username).
		SetPassword(dc.password).
		SetProtocolVersion(4). // MQTT 3.1.1, no fallback to 3.1
		SetCleanSession(dc.cleanSession).
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetKeepAlive(dc.keepAlive).
		SetPingTimeout(dc.keepAlive / 2).
		SetConnectTimeout(dc.connectTimeout).
		SetWriteTimeout(dc.writeTimeout).
		SetOrderMatters(true).
		// Messages of a persistent session can arrive before Subscribe
		// returns, with no route yet: the default handler takes them all,
		// and Subscribe is called without a callback.
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			dc.onMessage(message{topic: m.Topic(), payload: m.Payload()})
		}).
		SetConnectionLostHandler(func(_ paho.Client, err error) { dc.onLost(err) })
	if dc.tls != nil {
		opts.SetTLSConfig(dc.tls)
	}
	if dc.willTopic != "" {
		opts.SetBinaryWill(dc.willTopic, dc.willPayload, 1, true)
	}
	c := paho.NewClient(opts)
	tok := c.Connect()
	select {
	case <-tok.Done():
	case <-ctx.Done():
		<-tok.Done()
		c.Disconnect(0)
		return nil, ctx.Err()
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	return c, nil
}

// subscribe subscribes at QoS 1 and fails unless the broker granted every
// filter.
func subscribe(c paho.Client, filters []string, timeout time.Duration) error {
	m := make(map[string]byte, len(filters))
	for _, f := range filters {
		m[f] = 1
	}
	tok := c.SubscribeMultiple(m, nil)
	if !tok.WaitTimeout(timeout) {
		return errors.New("subscribe: no answer from the broker")
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	st, ok := tok.(*paho.SubscribeToken)
	if !ok {
		return nil
	}
	res := st.Result()
	for _, f := range filters {
		if code, ok := res[f]; !ok || code >= subackFailure {
			return fmt.Errorf("subscribe: the broker refused %s", f)
		}
	}
	return nil
}

// wait waits for tok up to timeout and returns its error.
func wait(tok paho.Token, timeout time.Duration) error {
	if !tok.WaitTimeout(timeout) {
		return errors.New("no acknowledgement from the broker in time")
	}
	return tok.Error()
}

func checkBrokerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "tcp", "mqtt", "ssl", "tls", "mqtts", "ws", "wss":
	default:
		return fmt.Errorf("scheme %q is not tcp, ssl, tls, mqtt, mqtts, ws or wss", u.Scheme)
	}
	if u.Host == "" {
		return errors.New("no host")
	}
	return nil
}

// backoff is an exponential delay with jitter between connection attempts.
type backoff struct {
	min, max, cur time.Duration
}

// next is the delay before the next attempt: doubling from min up to max,
// each drawn from the upper half so that many edges do not retry in step.
func (b *backoff) next() time.Duration {
	switch {
	case b.cur == 0:
		b.cur = b.min
	case b.cur < b.max:
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur/2 + rand.N(b.cur/2+1)
}

func (b *backoff) reset() { b.cur = 0 }

// sleep waits d or until ctx ends, reporting whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
