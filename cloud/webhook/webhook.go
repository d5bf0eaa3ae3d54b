// Package webhook delivers the cloud's events to webhook endpoints,
// signed following the Standard Webhooks scheme: the dispatcher claims
// due deliveries from the store, sends each once per claim, and records
// the attempt (docs/decisions.md, "Webhooks").
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ratelog"
)

// Sign returns the webhook-signature header value for a message signed
// with each of secrets (whsec_ and base64, as NewWebhookSecret makes
// them): "v1,<base64 HMAC-SHA256 of id.timestamp.body>" per secret,
// separated by spaces.
func Sign(secrets []string, id string, ts time.Time, body []byte) (string, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil {
			return "", fmt.Errorf("webhook secret: %w", err)
		}
		m := hmac.New(sha256.New, key)
		m.Write([]byte(id))
		m.Write([]byte{'.'})
		m.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
		m.Write([]byte{'.'})
		m.Write(body)
		sigs = append(sigs, "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	}
	return strings.Join(sigs, " "), nil
}

// DefaultTimeout is how long one attempt may take, connection and
// response headers included.
const DefaultTimeout = 10 * time.Second

type modeKey struct{}

// WithMode returns ctx saying which mode's rules (cloud.WebhookPolicy) a
// request made with NewClient's client connects under; without it the
// client applies live mode's.
func WithMode(ctx context.Context, m cloud.Mode) context.Context {
	return context.WithValue(ctx, modeKey{}, m)
}

// NewClient returns the HTTP client deliveries are sent with: it connects
// only to addresses policy allows for the mode the request's context
// carries (every address a name resolves to is checked, at connect time,
// so a name cannot be pointed somewhere forbidden after it was accepted),
// uses no proxy, and follows no redirect (a 3xx is a failed attempt).
func NewClient(policy cloud.WebhookPolicy) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		mode, ok := ctx.Value(modeKey{}).(cloud.Mode)
		if !ok {
			mode = cloud.ModeLive
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		var refused, failed error
		for _, ip := range ips {
			if err := policy.CheckWebhookAddr(mode, ip); err != nil {
				refused = outcomeError{ResultRefused, fmt.Errorf("refused: %w", err)}
				continue
			}
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.Unmap().String(), port))
			if err == nil {
				return c, nil
			}
			failed = err
		}
		switch {
		case failed != nil:
			return nil, failed
		case refused != nil:
			return nil, refused
		}
		return nil, fmt.Errorf("%s has no address", host)
	}
	transport := func() *http.Transport {
		return &http.Transport{
			Proxy:               nil,
			DialContext:         dial,
			TLSHandshakeTimeout: 5 * time.Second,
			MaxIdleConnsPerHost: 64, // above any Workers: each worker keeps its connection
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   true,
		}
	}
	return &http.Client{
		// A pool of connections per mode: a connection dialled under test
		// mode's rules is never reused for a live-mode request.
		Transport:     byMode{live: transport(), test: transport()},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// byMode sends each request through the transport of its mode (WithMode).
type byMode struct{ live, test *http.Transport }

func (b byMode) RoundTrip(r *http.Request) (*http.Response, error) {
	if m, _ := r.Context().Value(modeKey{}).(cloud.Mode); m == cloud.ModeTest {
		return b.test.RoundTrip(r)
	}
	return b.live.RoundTrip(r)
}

// Dispatcher sends due deliveries. Any number of dispatchers, in one
// process or many sharing a store, may run at once: each delivery is
// claimed by one of them at a time.
type Dispatcher struct {
	Service *cloud.Service
	// Body renders an event as a delivery's body: the envelope GET /events
	// returns (httpapi.EventBody).
	Body   func(cloud.Event) ([]byte, error)
	Client *http.Client // NewClient(Service.WebhookPolicy()) when nil
	Log    *slog.Logger
	// Batch is how many deliveries one claim takes (32 when 0); Workers
	// how many of them are sent at once (8 when 0).
	Batch, Workers int
	// Poll is how long Run waits for a wake-up before it looks for due
	// deliveries anyway (1 s when 0): retries fall due without one, and
	// other processes' events wake only their own dispatcher.
	Poll time.Duration
	// Timeout bounds each attempt (DefaultTimeout when 0); it must stay
	// well below cloud.WebhookLease.
	Timeout time.Duration
	// Grace is how long attempts in flight when Run's or RunOnce's
	// context ends may still take before they are cut (Timeout when 0):
	// a process stopping lets them finish and records their outcome,
	// instead of recording a cut attempt as a failure that spends a
	// retry step.
	Grace time.Duration
	// Clock gives the time a delivery is signed at (time.Now when nil):
	// the receiver's clock, not the service's, judges it. The limit on
	// failed-attempt warnings counts its minutes by it too.
	Clock func() time.Time
	// Observe, when set, is told what each attempt Send makes came to
	// (one of Results), for metrics.
	Observe func(result string)

	once sync.Once
}

func (d *Dispatcher) init() {
	d.once.Do(func() {
		if d.Client == nil {
			d.Client = NewClient(d.Service.WebhookPolicy())
		}
		if d.Log == nil {
			d.Log = slog.New(slog.DiscardHandler)
		}
		if d.Clock == nil {
			d.Clock = time.Now
		}
		// A receiver that is down fails every attempt: its warnings are
		// rate-limited, so that a flood cannot fill a disk.
		d.Log = slog.New(ratelog.New(d.Log.Handler(), 0, 0, d.Clock))
		if d.Batch <= 0 {
			d.Batch = 32
		}
		if d.Workers <= 0 {
			d.Workers = 8
		}
		if d.Poll <= 0 {
			d.Poll = time.Second
		}
		if d.Timeout <= 0 {
			d.Timeout = DefaultTimeout
		}
		if d.Grace <= 0 {
			d.Grace = d.Timeout
		}
	})
}

// Run sends due deliveries until ctx ends. Then it claims no more, lets
// the attempts in flight finish (within Grace) and records them, and
// returns nil.
func (d *Dispatcher) Run(ctx context.Context) error {
	d.init()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		n, err := d.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			d.Log.Warn("webhook deliveries", "err", err)
		}
		if n == d.Batch && err == nil {
			continue // more may be due
		}
		t.Reset(d.Poll)
		select {
		case <-ctx.Done():
			return nil
		case <-d.Service.WebhookWake():
		case <-t.C:
		}
	}
}

// RunOnce claims one batch of due deliveries, sends them and records
// their attempts, and returns how many it claimed. When ctx ends, the
// attempts already started run on for up to Grace and are recorded; the
// claimed deliveries not yet started are left to fall due again when
// their claim's lease (cloud.WebhookLease) runs out, with no attempt
// spent.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	d.init()
	jobs, err := d.Service.ClaimWebhooks(ctx, d.Batch)
	if err != nil {
		return 0, err
	}
	send, cancel := d.afterGrace(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, d.Workers)
	for _, j := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			r := d.Send(send, j)
			if !r.OK() {
				d.Log.Warn("webhook attempt failed", "endpoint_id", j.Endpoint.ID, "event_id", j.Event.ID,
					"event_type", j.Event.Type, "status", r.StatusCode, "error", r.Error, "duration", r.Duration)
			}
			// The attempt is recorded even when ctx ends meanwhile: it
			// was made.
			if err := d.Service.CompleteWebhook(context.WithoutCancel(ctx), j, r); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("record attempt of %s to %s: %w", j.Event.ID, j.Endpoint.ID, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return len(jobs), errors.Join(errs...)
}

// afterGrace returns a context that ends Grace after ctx does (or when
// cancel is called), for the attempts in flight when ctx ends.
func (d *Dispatcher) afterGrace(ctx context.Context) (context.Context, context.CancelFunc) {
	send, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(d.Grace, cancel)
		context.AfterFunc(send, func() { t.Stop() })
	})
	return send, func() {
		stop()
		cancel()
	}
}

// Send makes one attempt of a claimed delivery and says what it came to.
func (d *Dispatcher) Send(ctx context.Context, j cloud.WebhookJob) cloud.WebhookResult {
	d.init()
	start := time.Now()
	r := cloud.WebhookResult{AttemptedAt: d.Service.Now()}
	fail := func(err error) cloud.WebhookResult {
		r.Duration, r.Error = time.Since(start), trim(err.Error(), 500)
		d.observe(failure(err))
		return r
	}
	if err := d.Service.WebhookPolicy().CheckWebhookURL(j.Endpoint.Tenant.Mode, j.Endpoint.URL); err != nil {
		return fail(outcomeError{ResultRefused, fmt.Errorf("url refused: %w", err)})
	}
	body, err := d.Body(j.Event)
	if err != nil {
		return fail(fmt.Errorf("render event: %w", err))
	}
	ts := d.Clock()
	sig, err := Sign(j.Endpoint.Secrets(d.Service.Now()), j.Event.ID, ts, body)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(WithMode(ctx, j.Endpoint.Tenant.Mode), d.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.Endpoint.URL, bytes.NewReader(body))
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "svc-webhooks/1")
	req.Header.Set("webhook-id", j.Event.ID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	resp, err := d.Client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fail(outcomeError{ResultTimeout, fmt.Errorf("no response within %s", d.Timeout)})
		}
		return fail(err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	resp.Body.Close()
	r.Duration, r.StatusCode = time.Since(start), resp.StatusCode
	d.observe(statusResult(resp.StatusCode))
	return r
}

// What an attempt came to, as Dispatcher.Observe is told: a fixed set, so
// that a metric labelled with it has a bounded number of series.
const (
	ResultSucceeded   = "succeeded"  // a 2xx response
	ResultStatus3xx   = "status_3xx" // a redirect, which is not followed
	ResultStatus4xx   = "status_4xx"
	ResultStatus5xx   = "status_5xx"
	ResultStatusOther = "status_other" // a 1xx or a code outside 100–599
	ResultTimeout     = "timeout"      // no response in time (Dispatcher.Timeout, or the dial's)
	ResultRefused     = "refused"      // the URL or every address it resolves to is not allowed (cloud.WebhookPolicy)
	ResultError       = "error"        // anything else: no such host, connection refused, TLS...
)

// Results are every result Observe may be told, for a metric to start
// each at zero.
var Results = []string{ResultSucceeded, ResultStatus3xx, ResultStatus4xx, ResultStatus5xx, ResultStatusOther,
	ResultTimeout, ResultRefused, ResultError}

func (d *Dispatcher) observe(result string) {
	if d.Observe != nil {
		d.Observe(result)
	}
}

func statusResult(code int) string {
	switch code / 100 {
	case 2:
		return ResultSucceeded
	case 3:
		return ResultStatus3xx
	case 4:
		return ResultStatus4xx
	case 5:
		return ResultStatus5xx
	}
	return ResultStatusOther
}

// outcomeError is an error that says what result it is; its text is its
// cause's, so the attempt records the same message.
type outcomeError struct {
	result string
	err    error
}

func (e outcomeError) Error() string { return e.err.Error() }
func (e outcomeError) Unwrap() error { return e.err }

// failure is the result of an attempt that failed with err before a
// response came.
func failure(err error) string {
	var o outcomeError
	if errors.As(err, &o) {
		return o.result
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ResultTimeout
	}
	return ResultError
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
