package dynsec

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// The plugin's topics (Mosquitto 2.0: "v1" of the dynamic-security API).
const (
	RequestTopic  = "$CONTROL/dynamic-security/v1"
	ResponseTopic = RequestTopic + "/response"
)

// DefaultTimeout bounds a connection and each request's answer when
// Config.Timeout is 0.
const DefaultTimeout = 5 * time.Second

// Config says how a Control reaches the plugin.
type Config struct {
	// BrokerURL is the broker's address: tcp://, ssl://, ws:// or wss://
	// with a host, as paho dials it.
	BrokerURL string
	// Username and Password are a client holding the plugin's admin role
	// (mosquitto_ctrl dynsec init makes one); required.
	Username, Password string
	// TLS verifies an ssl:// or wss:// broker; nil means the system's
	// roots.
	TLS *tls.Config
	// ClientID is the connection's client ID; empty means
	// "svc-dynsec-" and random hex, so that several processes may use
	// the same admin at once.
	ClientID string
	// Timeout bounds connecting and each request's answer; 0 means
	// DefaultTimeout.
	Timeout time.Duration
}

// Validate names the first unusable field, wrapping ErrConfig.
func (c Config) Validate() error {
	u, err := url.Parse(c.BrokerURL)
	switch {
	case err != nil || u.Host == "":
		return fmt.Errorf("%w: BrokerURL %q: want scheme://host:port", ErrConfig, c.BrokerURL)
	case u.Scheme != "tcp" && u.Scheme != "ssl" && u.Scheme != "ws" && u.Scheme != "wss":
		return fmt.Errorf("%w: BrokerURL %q: want tcp://, ssl://, ws:// or wss://", ErrConfig, c.BrokerURL)
	case c.Username == "":
		return fmt.Errorf("%w: Username is empty: the plugin's admin client is needed", ErrConfig)
	case c.Timeout < 0:
		return fmt.Errorf("%w: Timeout is negative", ErrConfig)
	}
	return nil
}

// Control sends commands to the dynamic security plugin. It is safe for
// concurrent use: requests go one at a time.
type Control struct {
	cfg Config

	mu      sync.Mutex  // one request at a time; guards conn
	conn    paho.Client // nil until connected, and after a failure
	replies chan []byte // answers on ResponseTopic, from paho's callback
}

// New returns a Control for cfg. It connects when first used, so a
// broker that is down does not stop the caller from starting.
func New(cfg Config) (*Control, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ClientID == "" {
		cfg.ClientID = "svc-dynsec-" + randomHex(6)
	}
	return &Control{cfg: cfg, replies: make(chan []byte, 16)}, nil
}

// Close disconnects from the broker. The Control may be used again: it
// connects anew.
func (c *Control) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop()
}

// drop closes the connection, if any; the caller holds mu.
func (c *Control) drop() {
	if c.conn != nil {
		c.conn.Disconnect(100)
		c.conn = nil
	}
}

// command is one command of a request. Fields a command does not take
// are left out.
type command struct {
	Command         string    `json:"command"`
	Username        string    `json:"username,omitempty"`
	Password        string    `json:"password,omitempty"`
	ClientID        string    `json:"clientid,omitempty"`
	Rolename        string    `json:"rolename,omitempty"`
	TextName        string    `json:"textname,omitempty"`
	TextDescription string    `json:"textdescription,omitempty"`
	Roles           []roleRef `json:"roles,omitempty"`
	ACLs            []ACL     `json:"acls,omitempty"`
	Verbose         bool      `json:"verbose,omitempty"`
	Count           int       `json:"count,omitempty"`
	Offset          int       `json:"offset,omitempty"`
	CorrelationData string    `json:"correlationData,omitempty"`
}

// roleRef names a role of a client.
type roleRef struct {
	Rolename string `json:"rolename"`
	Priority *int   `json:"priority,omitempty"`
}

// response is the plugin's answer to one command: Error is empty when it
// was carried out.
type response struct {
	Command         string          `json:"command"`
	Error           string          `json:"error"`
	Data            json.RawMessage `json:"data"`
	CorrelationData string          `json:"correlationData"`
}

// err returns the response's refusal as a *CommandError, nil when the
// command was carried out or refused for one of the reasons in ok.
func (r response) err(ok ...string) error {
	if r.Error == "" {
		return nil
	}
	for _, m := range ok {
		if r.Error == m {
			return nil
		}
	}
	return &CommandError{Command: r.Command, Message: r.Error}
}

// do sends cmds as one request and returns the plugin's answers, one per
// command, in order. The plugin carries out a request's commands one
// after the other before it reads another request, so no other admin's
// command comes between them. Errors wrap ErrUnavailable.
func (c *Control) do(ctx context.Context, cmds ...command) ([]response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	if err := c.connect(ctx); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnavailable, c.cfg.BrokerURL, err)
	}
	for {
		select { // answers to requests given up on
		case <-c.replies:
			continue
		default:
		}
		break
	}
	corr := randomHex(12)
	for i := range cmds {
		cmds[i].CorrelationData = corr
	}
	payload, err := json.Marshal(struct {
		Commands []command `json:"commands"`
	}{cmds})
	if err != nil {
		return nil, fmt.Errorf("dynsec: %w", err)
	}
	tok := c.conn.Publish(RequestTopic, 1, false, payload)
	if err := waitToken(ctx, tok); err != nil {
		c.drop()
		return nil, fmt.Errorf("%w: publish to %s: %w", ErrUnavailable, RequestTopic, err)
	}
	for {
		select {
		case raw := <-c.replies:
			var ans struct {
				Responses []response `json:"responses"`
			}
			if json.Unmarshal(raw, &ans) != nil || len(ans.Responses) == 0 || ans.Responses[0].CorrelationData != corr {
				continue // another admin's, or an earlier request's
			}
			if len(ans.Responses) != len(cmds) {
				return nil, fmt.Errorf("dynsec: %d answers to %d commands", len(ans.Responses), len(cmds))
			}
			return ans.Responses, nil
		case <-ctx.Done():
			// The answer may still come: a new connection leaves it behind.
			c.drop()
			return nil, fmt.Errorf("%w: no answer on %s within %s (is the dynamic security plugin loaded, and does %q hold its admin role?)",
				ErrUnavailable, ResponseTopic, c.cfg.Timeout, c.cfg.Username)
		}
	}
}

// connect makes the connection unless it is open, and subscribes to the
// plugin's answers; the caller holds mu.
func (c *Control) connect(ctx context.Context) error {
	if c.conn != nil && c.conn.IsConnectionOpen() {
		return nil
	}
	c.drop()
	deadline, _ := ctx.Deadline()
	opts := paho.NewClientOptions().
		AddBroker(c.cfg.BrokerURL).
		SetClientID(c.cfg.ClientID).
		SetUsername(c.cfg.Username).
		SetPassword(c.cfg.Password).
		SetProtocolVersion(4).
		SetCleanSession(true).
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetConnectTimeout(time.Until(deadline)).
		SetWriteTimeout(c.cfg.Timeout).
		SetKeepAlive(30 * time.Second)
	if c.cfg.TLS != nil {
		opts.SetTLSConfig(c.cfg.TLS)
	}
	conn := paho.NewClient(opts)
	ct := conn.Connect()
	select {
	case <-ct.Done():
	case <-ctx.Done():
		<-ct.Done() // bounded by the connect timeout: no client left half open
		conn.Disconnect(0)
		return fmt.Errorf("connect as %q: %w", c.cfg.Username, ctx.Err())
	}
	if err := ct.Error(); err != nil {
		return fmt.Errorf("connect as %q: %w", c.cfg.Username, err)
	}
	// The callback never blocks (paho issue 427): an answer nobody waits
	// for is dropped when the queue is full.
	tok := conn.Subscribe(ResponseTopic, 1, func(_ paho.Client, m paho.Message) {
		select {
		case c.replies <- m.Payload():
		default:
		}
	})
	if err := waitToken(ctx, tok); err != nil {
		conn.Disconnect(0)
		return fmt.Errorf("subscribe to %s: %w", ResponseTopic, err)
	}
	if st, ok := tok.(*paho.SubscribeToken); ok && st.Result()[ResponseTopic] >= 0x80 {
		conn.Disconnect(0)
		return fmt.Errorf("the broker refused %q a subscription to %s: give it the dynamic security plugin's admin role", c.cfg.Username, ResponseTopic)
	}
	c.conn = conn
	return nil
}

// waitToken waits for tok until ctx ends.
func waitToken(ctx context.Context, tok paho.Token) error {
	select {
	case <-tok.Done():
		return tok.Error()
	case <-ctx.Done():
		return errors.New("no answer from the broker in time")
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
