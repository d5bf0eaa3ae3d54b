package cloud

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/svc-vms/svc/shared/ids"
)

// WebhookEndpoint is a URL that receives the tenant's events
// (docs/decisions.md, "Webhooks").
type WebhookEndpoint struct {
	ID          string // we_...
	Tenant      Tenant
	URL         string
	Description string
	EventTypes  []string // sorted event types, or just "*" for every type, new ones included
	Disabled    bool
	// DisabledReason says why a disabled endpoint is: DisabledManually or
	// DisabledFailing.
	DisabledReason string
	Secret         string     // whsec_...: signs every delivery
	PrevSecret     string     // the secret before the last rotation, still signing until PrevUntil
	PrevUntil      *time.Time // nil when there is no previous secret
	FailingSince   *time.Time // the first failed attempt since the last success
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Why an endpoint is disabled.
const (
	DisabledManually = "manual"  // POST .../disable
	DisabledFailing  = "failing" // every attempt failed for the whole retry schedule
)

// Subscribes reports whether the endpoint subscribes to the event type.
func (e WebhookEndpoint) Subscribes(typ string) bool {
	return slices.Contains(e.EventTypes, "*") || slices.Contains(e.EventTypes, typ)
}

// Secrets returns the secrets that sign a delivery at now: the current
// one, and the previous one within 24 hours of a rotation.
func (e WebhookEndpoint) Secrets(now time.Time) []string {
	s := []string{e.Secret}
	if e.PrevSecret != "" && e.PrevUntil != nil && now.Before(*e.PrevUntil) {
		s = append(s, e.PrevSecret)
	}
	return s
}

// DeliveryStatus is where a webhook delivery stands.
type DeliveryStatus string

const (
	DeliveryPending   DeliveryStatus = "pending"   // an attempt is due or scheduled
	DeliverySucceeded DeliveryStatus = "succeeded" // an attempt got a 2xx
	DeliveryFailed    DeliveryStatus = "failed"    // every scheduled attempt failed
)

// WebhookDelivery is one event sent to one endpoint: the message the
// webhook-id header names (the event's ID), with its attempts.
type WebhookDelivery struct {
	Tenant         Tenant
	EndpointID     string
	EventID        string
	EventType      string
	Status         DeliveryStatus
	Attempts       int        // attempts made
	Step           int        // slots of WebhookSchedule used: the next attempt waits WebhookSchedule[Step]
	NextAttemptAt  *time.Time // when pending
	LastAttemptAt  *time.Time
	LastStatusCode int // the last attempt's HTTP status; 0 when it got none
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// WebhookAttempt is one HTTP request of a delivery.
type WebhookAttempt struct {
	ID          string // wha_...
	Tenant      Tenant
	EndpointID  string
	EventID     string
	AttemptedAt time.Time
	Duration    time.Duration
	StatusCode  int    // 0 when no response came (Error says why)
	Error       string // why it failed without a response: timeout, refused address, ...
	Succeeded   bool
	// NextAttemptAt is when the delivery was retried after this attempt;
	// nil after a success or the last attempt.
	NextAttemptAt *time.Time
}

// WebhookJob is a delivery claimed for sending: what the sender needs.
type WebhookJob struct {
	Delivery WebhookDelivery
	Endpoint WebhookEndpoint
	Event    Event
	Claim    string // the claim token; only its holder completes the delivery
}

// WebhookResult is what an attempt's request came to.
type WebhookResult struct {
	AttemptedAt time.Time
	Duration    time.Duration
	StatusCode  int
	Error       string
}

// OK reports whether the attempt succeeded: a 2xx response.
func (r WebhookResult) OK() bool { return r.StatusCode >= 200 && r.StatusCode < 300 }

// DeliveryFilter narrows ListWebhookDeliveries.
type DeliveryFilter struct {
	Status  DeliveryStatus
	EventID string
}

// AttemptFilter narrows ListWebhookAttempts.
type AttemptFilter struct {
	EventID string
}

// ResendFilter chooses the deliveries ResendWebhookDeliveries queues
// again: one by its event, or every failed one created at or after Since.
type ResendFilter struct {
	EventID string
	Since   *time.Time
}

// WebhookSchedule is the wait before each retry of a delivery: the first
// attempt is at once, the last about 27 and a half hours after it. A
// delivery whose last attempt fails is failed.
var WebhookSchedule = []time.Duration{
	5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour,
}

// WebhookLease is how long a claimed delivery is held by its claimant
// unless SetWebhookLease says otherwise: a process that dies mid-attempt
// leaves it to be claimed again after this. It is well beyond the time a
// claimed batch takes (webhook.Dispatcher: 32 deliveries through 8
// workers, 10 s each at most, so 40 s), so a live claimant always
// completes first.
const WebhookLease = 2 * time.Minute

// MinWebhookLease is the shortest lease SetWebhookLease should be given:
// above a batch's worst 40 s, with margin for a slow database.
const MinWebhookLease = time.Minute

// auditTime is how audit details write times: as the API does, UTC to the
// millisecond.
const auditTime = "2006-01-02T15:04:05.000Z"

// SecretOverlap is how long a rotated secret keeps signing deliveries.
const SecretOverlap = 24 * time.Hour

// WebhookPolicy is where deliveries may go.
type WebhookPolicy struct {
	// AllowLoopbackInTest lets test-mode endpoints use loopback addresses
	// (localhost, 127.0.0.1, ::1), for development. Live mode never may.
	AllowLoopbackInTest bool
}

// SetWebhookLease sets how long a claimed delivery is held by its
// claimant (WebhookLease when d is 0): shorter lets deliveries a stopped
// or dead process had claimed go out sooner, but must stay above the time
// a claimed batch takes (MinWebhookLease), or two claimants send one
// delivery. Every process sharing a store should use the same.
func (s *Service) SetWebhookLease(d time.Duration) { s.webhookLease = d }

// SetWebhookPolicy sets where deliveries may go.
func (s *Service) SetWebhookPolicy(p WebhookPolicy) { s.webhookPolicy = p }

// WebhookPolicy returns where deliveries may go.
func (s *Service) WebhookPolicy() WebhookPolicy { return s.webhookPolicy }

// CheckWebhookURL returns why a tenant of mode may not send to u, or nil:
// live mode needs https; userinfo and fragments are refused; a host that
// is an IP address or a name for loopback must be allowed by
// CheckWebhookAddr, and a name's last label may not be numeric. Names are
// resolved only when sending, where the dialer checks every address
// (CheckWebhookAddr), so a name that resolves somewhere forbidden later is
// refused then.
func (p WebhookPolicy) CheckWebhookURL(mode Mode, raw string) error {
	if len(raw) > 2048 {
		return errors.New("must be at most 2048 characters")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return errors.New("must be an absolute http or https URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && mode == ModeTest:
	case u.Scheme == "http":
		return errors.New("must use https in live mode")
	default:
		return errors.New("must be an http or https URL")
	}
	if u.User != nil {
		return errors.New("must not carry a user name or password")
	}
	if u.Fragment != "" || strings.HasSuffix(raw, "#") {
		return errors.New("must not have a fragment")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if host == "" {
		return errors.New("must name a host")
	}
	if port := u.Port(); port != "" {
		var n int
		if _, err := fmt.Sscan(port, &n); err != nil || n < 1 || n > 65535 {
			return errors.New("must have a port from 1 to 65535")
		}
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return p.CheckWebhookAddr(mode, netip.IPv6Loopback())
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.CheckWebhookAddr(mode, a)
	}
	if !strings.Contains(host, ".") {
		return errors.New("must name a host by its full domain name or a public IP address")
	}
	if len(host) > 253 || slices.ContainsFunc(strings.Split(host, "."), func(l string) bool { return l == "" || len(l) > 63 }) {
		// "..", "a..b.example", ".example": no domain name has an empty
		// label, nor one over 63 bytes.
		return errors.New("must name a host by its full domain name or a public IP address")
	}
	if numericLabel(host[strings.LastIndexByte(host, '.')+1:]) {
		// 127.1, 0x7f.0.0.1, 0177.0.0.1: not a domain name (no top-level
		// domain is numeric), and resolvers that follow inet_aton read it
		// as an IPv4 address netip does not.
		return errors.New("must name a host by its full domain name or an IP address in its usual form (such as 192.0.2.1)")
	}
	return nil
}

// numericLabel reports whether a domain label is a number as inet_aton
// reads one: decimal, octal or 0x hex.
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	if hex, ok := strings.CutPrefix(strings.ToLower(l), "0x"); ok {
		return !strings.ContainsFunc(hex, func(r rune) bool { return !strings.ContainsRune("0123456789abcdef", r) })
	}
	return !strings.ContainsFunc(l, func(r rune) bool { return r < '0' || r > '9' })
}

// blocked4 are the IPv4 ranges beyond IsPrivate and the like that no
// delivery may reach (IANA's special-purpose registry, RFC 6890).
var blocked4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (carrier NAT)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation (TEST-NET-1)
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast, deprecated
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation (TEST-NET-2)
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation (TEST-NET-3)
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
}

// blocked6 are the IPv6 ranges beyond IsPrivate (fc00::/7) and the like
// that no delivery may reach, whatever they embed.
var blocked6 = []netip.Prefix{
	ipv4Compatible,                          // deprecated (RFC 4291)
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64 (RFC 8215)
	netip.MustParsePrefix("100::/64"),       // discard only
	netip.MustParsePrefix("2001:2::/48"),    // benchmarking
	netip.MustParsePrefix("2001:10::/28"),   // ORCHID, deprecated
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("3fff::/20"),      // documentation (RFC 9637)
	netip.MustParsePrefix("fec0::/10"),      // site-local, deprecated (RFC 3879)
}

// The IPv6 forms that carry an IPv4 address (IPv4-mapped ::ffff:0:0/96 is
// unmapped before embedded4 is asked).
var (
	ipv4Compatible = netip.MustParsePrefix("::/96")
	ipv4Translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	nat64          = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	teredo         = netip.MustParsePrefix("2001::/32")
)

// embedded is an IPv4 address an IPv6 address carries, and the form.
type embedded struct {
	form string
	addr netip.Addr
}

// embedded4 returns the IPv4 addresses an IPv6 address carries: a packet
// to it reaches, or is translated towards, them, so they must be allowed
// too.
func embedded4(a netip.Addr) []embedded {
	b := a.As16()
	v4 := func(p []byte) netip.Addr { return netip.AddrFrom4([4]byte(p)) }
	switch {
	case ipv4Compatible.Contains(a):
		return []embedded{{"IPv4-compatible", v4(b[12:])}}
	case ipv4Translated.Contains(a):
		return []embedded{{"IPv4-translated", v4(b[12:])}}
	case nat64.Contains(a):
		return []embedded{{"NAT64", v4(b[12:])}}
	case sixToFour.Contains(a):
		return []embedded{{"6to4", v4(b[2:6])}}
	case teredo.Contains(a):
		// The Teredo server's address, and the client's with every bit
		// inverted.
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return []embedded{{"Teredo server", v4(b[4:8])}, {"Teredo client", client}}
	}
	return nil
}

// CheckWebhookAddr returns why a delivery of a tenant of mode may not
// connect to a, or nil. It is the one check of where a delivery goes, made
// on IP literals when an endpoint is created or updated and on every
// address a name resolves to when a delivery connects. Loopback (unless
// allowed in test mode), private, link-local, multicast, unspecified,
// documentation and other reserved addresses are refused; an IPv6
// address that embeds an IPv4 one (IPv4-mapped, IPv4-compatible,
// IPv4-translated, NAT64, 6to4, Teredo) is refused when what it embeds is,
// loopback included, so no IPv6 spelling reaches an IPv4 address the IPv4
// rules refuse. An address with a zone is refused: only link-local ones
// have one.
func (p WebhookPolicy) CheckWebhookAddr(mode Mode, a netip.Addr) error {
	if !a.IsValid() {
		return errors.New("is not an IP address")
	}
	if a.Zone() != "" {
		return fmt.Errorf("%s has a zone: it is link-local", a)
	}
	a = a.Unmap()
	loopbackOK := mode == ModeTest && p.AllowLoopbackInTest
	if a.Is4() {
		return check4(a, loopbackOK)
	}
	if a.IsLoopback() {
		if loopbackOK {
			return nil
		}
		return fmt.Errorf("%s is a loopback address", a)
	}
	if a.IsUnspecified() {
		return fmt.Errorf("%s is the unspecified address", a)
	}
	for _, e := range embedded4(a) {
		if err := check4(e.addr, false); err != nil {
			return fmt.Errorf("%s is an address of the %s form for %s, and %w", a, e.form, e.addr, err)
		}
	}
	switch {
	case a.IsPrivate():
		return fmt.Errorf("%s is a private address", a)
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return fmt.Errorf("%s is a link-local address", a)
	case a.IsMulticast() || a.IsInterfaceLocalMulticast():
		return fmt.Errorf("%s is a multicast address", a)
	}
	for _, b := range blocked6 {
		if b.Contains(a) {
			return fmt.Errorf("%s is a reserved address", a)
		}
	}
	return nil
}

// check4 applies the IPv4 rules to a.
func check4(a netip.Addr, loopbackOK bool) error {
	switch {
	case a.IsLoopback():
		if loopbackOK {
			return nil
		}
		return fmt.Errorf("%s is a loopback address", a)
	case a.IsPrivate():
		return fmt.Errorf("%s is a private address", a)
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return fmt.Errorf("%s is a link-local address", a)
	case a.IsMulticast():
		return fmt.Errorf("%s is a multicast address", a)
	case a.IsUnspecified():
		return fmt.Errorf("%s is the unspecified address", a)
	}
	for _, b := range blocked4 {
		if b.Contains(a) {
			return fmt.Errorf("%s is a reserved address", a)
		}
	}
	return nil
}

// NewWebhookSecret returns a fresh signing secret: whsec_ and the base64
// of 32 random bytes, the form the Standard Webhooks libraries take.
func NewWebhookSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

// WebhookInput is what creating or updating an endpoint gives; nil fields
// are left as they are on update.
type WebhookInput struct {
	URL         *string
	Description *string
	EventTypes  []string // nil: unchanged
}

// webhooksAllowed applies the spec's plan rule: webhook endpoints in live
// mode need Growth or above.
func (s *Service) webhooksAllowed(a Actor) error {
	if a.Tenant.Mode == ModeLive && !a.Plan.Includes(PlanGrowth) {
		return &PlanError{Detail: fmt.Sprintf("Webhook endpoints in live mode need the Growth plan or above; this organisation is on %s.", a.Plan)}
	}
	return nil
}

// ValidateWebhookInput returns every problem with in for a tenant of
// mode, or nil.
func (s *Service) ValidateWebhookInput(mode Mode, in WebhookInput, create bool) error {
	_, err := s.checkWebhookInput(mode, in, create)
	return err
}

// checkWebhookInput validates in for the tenant's mode; create says every
// field but the description is required.
func (s *Service) checkWebhookInput(mode Mode, in WebhookInput, create bool) ([]string, error) {
	var verr ValidationError
	if in.URL == nil && create {
		verr.Add("url", "is required")
	}
	if in.URL != nil {
		if err := s.webhookPolicy.CheckWebhookURL(mode, *in.URL); err != nil {
			verr.Add("url", "%s", err)
		}
	}
	if in.Description != nil {
		switch d := *in.Description; {
		case utf8.RuneCountInString(d) > 500:
			verr.Add("description", "must be at most 500 characters")
		case strings.ContainsFunc(d, unicode.IsControl):
			verr.Add("description", "must not contain control characters")
		}
	}
	var types []string
	switch {
	case in.EventTypes == nil && create:
		verr.Add("event_types", "is required: a list of event types, or [\"*\"] for every type")
	case in.EventTypes != nil && len(in.EventTypes) == 0:
		verr.Add("event_types", "must list at least one event type, or \"*\" for every type")
	case in.EventTypes != nil:
		for i, t := range in.EventTypes {
			switch {
			case t == "*" && len(in.EventTypes) > 1:
				verr.Add(fmt.Sprintf("event_types[%d]", i), "\"*\" subscribes to every type and must stand alone")
			case t != "*" && !ValidEventType(t):
				verr.Add(fmt.Sprintf("event_types[%d]", i), "must be an event type, such as visit.created, or \"*\"")
			}
		}
		types = slices.Compact(slices.Sorted(slices.Values(in.EventTypes)))
	}
	return types, verr.Err()
}

// CreateWebhookEndpoint creates an enabled endpoint with a fresh secret,
// which the returned endpoint carries and the API shows this once.
func (s *Service) CreateWebhookEndpoint(ctx context.Context, a Actor, in WebhookInput) (WebhookEndpoint, error) {
	if err := s.webhooksAllowed(a); err != nil {
		return WebhookEndpoint{}, err
	}
	types, err := s.checkWebhookInput(a.Tenant.Mode, in, true)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	now := s.Now()
	e := WebhookEndpoint{ID: ids.New(ids.WebhookEndpoint), Tenant: a.Tenant, URL: *in.URL, EventTypes: types,
		Secret: NewWebhookSecret(), CreatedAt: now, UpdatedAt: now}
	if in.Description != nil {
		e.Description = *in.Description
	}
	if err := respond(ctx, e); err != nil {
		return WebhookEndpoint{}, err
	}
	if err := s.store.CreateWebhookEndpoint(ctx, e); err != nil {
		return WebhookEndpoint{}, fmt.Errorf("create webhook endpoint: %w", err)
	}
	return e, nil
}

// WebhookEndpoint returns one of the tenant's endpoints.
func (s *Service) WebhookEndpoint(ctx context.Context, a Actor, id string) (WebhookEndpoint, error) {
	if err := s.webhooksAllowed(a); err != nil {
		return WebhookEndpoint{}, err
	}
	return s.store.WebhookEndpoint(ctx, a.Tenant, id)
}

// WebhookEndpoints returns a page of the tenant's endpoints.
func (s *Service) WebhookEndpoints(ctx context.Context, a Actor, p Page) ([]WebhookEndpoint, bool, error) {
	if err := s.webhooksAllowed(a); err != nil {
		return nil, false, err
	}
	return s.store.ListWebhookEndpoints(ctx, a.Tenant, p)
}

// UpdateWebhookEndpoint changes an endpoint's URL, description or
// subscriptions.
func (s *Service) UpdateWebhookEndpoint(ctx context.Context, a Actor, id string, in WebhookInput) (WebhookEndpoint, error) {
	if err := s.webhooksAllowed(a); err != nil {
		return WebhookEndpoint{}, err
	}
	types, err := s.checkWebhookInput(a.Tenant.Mode, in, false)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	return s.updateEndpoint(ctx, a.Tenant, id, func(e *WebhookEndpoint, _ *eventLog) error {
		if in.URL != nil {
			e.URL = *in.URL
		}
		if in.Description != nil {
			e.Description = *in.Description
		}
		if types != nil {
			e.EventTypes = types
		}
		return nil
	})
}

// updateEndpoint runs fn on the endpoint in a store write whose events
// and audit entries fn adds to the log.
func (s *Service) updateEndpoint(ctx context.Context, t Tenant, id string, fn func(*WebhookEndpoint, *eventLog) error) (WebhookEndpoint, error) {
	ctx, l := withEvents(ctx)
	e, err := s.store.UpdateWebhookEndpoint(ctx, t, id, func(e *WebhookEndpoint) error {
		l.events, l.audit = l.events[:0], l.audit[:0] // a store may call fn again
		if err := fn(e, l); err != nil {
			return err
		}
		e.UpdatedAt = s.Now()
		return respond(ctx, *e)
	})
	return e, s.committed(l, err)
}

// DeleteWebhookEndpoint deletes an endpoint with its deliveries and
// attempts: nothing more is sent to it.
func (s *Service) DeleteWebhookEndpoint(ctx context.Context, a Actor, id string) error {
	if err := s.webhooksAllowed(a); err != nil {
		return err
	}
	return s.store.DeleteWebhookEndpoint(ctx, a.Tenant, id)
}

// SetWebhookEndpointEnabled enables or disables an endpoint. Disabling
// stops its deliveries where they are; enabling resumes them and clears
// the record of failures. Doing either twice is no error.
func (s *Service) SetWebhookEndpointEnabled(ctx context.Context, a Actor, id string, enabled bool) (WebhookEndpoint, error) {
	if err := s.webhooksAllowed(a); err != nil {
		return WebhookEndpoint{}, err
	}
	return s.updateEndpoint(ctx, a.Tenant, id, func(e *WebhookEndpoint, _ *eventLog) error {
		switch {
		case enabled && e.Disabled:
			e.Disabled, e.DisabledReason, e.FailingSince = false, "", nil
		case !enabled && !e.Disabled:
			e.Disabled, e.DisabledReason = true, DisabledManually
		}
		return nil
	})
}

// RotateWebhookSecret gives an endpoint a new secret, which the returned
// endpoint carries and the API shows this once. The secret it replaces
// keeps signing deliveries, beside the new one, for SecretOverlap. The
// rotation is audited.
func (s *Service) RotateWebhookSecret(ctx context.Context, a Actor, id string) (WebhookEndpoint, error) {
	if err := s.webhooksAllowed(a); err != nil {
		return WebhookEndpoint{}, err
	}
	return s.updateEndpoint(ctx, a.Tenant, id, func(e *WebhookEndpoint, l *eventLog) error {
		now := s.Now()
		until := now.Add(SecretOverlap)
		e.PrevSecret, e.PrevUntil, e.Secret = e.Secret, &until, NewWebhookSecret()
		detail, _ := json.Marshal(map[string]string{"previous_secret_valid_until": until.Format(auditTime)})
		l.audit = append(l.audit, AuditEvent{ID: ids.New(ids.AuditEvent), Tenant: a.Tenant, Action: AuditWebhookSecretRotated,
			ActorKind: ActorKey, ActorID: a.KeyID, ObjectType: "webhook_endpoint", ObjectID: e.ID,
			RequestID: RequestID(ctx), Detail: detail, CreatedAt: now})
		return nil
	})
}

// WebhookDelivery returns the delivery of an event to one of the tenant's
// endpoints.
func (s *Service) WebhookDelivery(ctx context.Context, a Actor, endpointID, eventID string) (WebhookDelivery, error) {
	if err := s.webhooksAllowed(a); err != nil {
		return WebhookDelivery{}, err
	}
	return s.store.WebhookDelivery(ctx, a.Tenant, endpointID, eventID)
}

// WebhookDeliveries returns a page of an endpoint's deliveries, newest
// first.
func (s *Service) WebhookDeliveries(ctx context.Context, a Actor, endpointID string, f DeliveryFilter, p Page) ([]WebhookDelivery, bool, error) {
	if err := s.webhooksAllowed(a); err != nil {
		return nil, false, err
	}
	if _, err := s.store.WebhookEndpoint(ctx, a.Tenant, endpointID); err != nil {
		return nil, false, err
	}
	return s.store.ListWebhookDeliveries(ctx, a.Tenant, endpointID, f, p)
}

// WebhookAttempts returns a page of an endpoint's attempts, newest first.
func (s *Service) WebhookAttempts(ctx context.Context, a Actor, endpointID string, f AttemptFilter, p Page) ([]WebhookAttempt, bool, error) {
	if err := s.webhooksAllowed(a); err != nil {
		return nil, false, err
	}
	if _, err := s.store.WebhookEndpoint(ctx, a.Tenant, endpointID); err != nil {
		return nil, false, err
	}
	return s.store.ListWebhookAttempts(ctx, a.Tenant, endpointID, f, p)
}

// ResendWebhook queues one more attempt, at once, of the delivery of an
// event to an endpoint that has finished (succeeded or failed): invalid
// state while it is still pending or the endpoint is disabled. A resent
// delivery that fails again is failed; it is not retried on the
// schedule.
func (s *Service) ResendWebhook(ctx context.Context, a Actor, endpointID, eventID string) (WebhookDelivery, error) {
	if err := s.webhooksAllowed(a); err != nil {
		return WebhookDelivery{}, err
	}
	d, err := s.store.WebhookDelivery(ctx, a.Tenant, endpointID, eventID)
	if err != nil {
		return WebhookDelivery{}, err
	}
	if err := s.resendable(ctx, a.Tenant, endpointID); err != nil {
		return WebhookDelivery{}, err
	}
	if d.Status == DeliveryPending {
		return WebhookDelivery{}, &StateError{Object: "webhook delivery", State: string(d.Status), Action: "resend"}
	}
	now, step := s.Now(), len(WebhookSchedule)
	_, err = s.store.ResendWebhookDeliveries(ctx, a.Tenant, endpointID, ResendFilter{EventID: eventID}, now, step, func(n int64) error {
		if n == 0 { // made pending meanwhile
			return &StateError{Object: "webhook delivery", State: string(DeliveryPending), Action: "resend"}
		}
		d.Status, d.NextAttemptAt, d.Step, d.UpdatedAt = DeliveryPending, &now, step, now
		return respond(ctx, d)
	})
	if err != nil {
		return WebhookDelivery{}, err
	}
	s.wakeWebhooks()
	return d, nil
}

// WebhookResend is what ResendFailedWebhooks did: how many deliveries
// created at or after Since it queued again, at QueuedAt.
type WebhookResend struct {
	Since    time.Time
	Resent   int64
	QueuedAt time.Time
}

// ResendFailedWebhooks queues one more attempt, at once, of every failed
// delivery to the endpoint created at or after since, and says how many.
func (s *Service) ResendFailedWebhooks(ctx context.Context, a Actor, endpointID string, since time.Time) (WebhookResend, error) {
	if err := s.webhooksAllowed(a); err != nil {
		return WebhookResend{}, err
	}
	if err := s.resendable(ctx, a.Tenant, endpointID); err != nil {
		return WebhookResend{}, err
	}
	r := WebhookResend{Since: since, QueuedAt: s.Now()}
	n, err := s.store.ResendWebhookDeliveries(ctx, a.Tenant, endpointID, ResendFilter{Since: &since}, r.QueuedAt, len(WebhookSchedule), func(n int64) error {
		r.Resent = n
		return respond(ctx, r)
	})
	if err != nil {
		return WebhookResend{}, err
	}
	if n > 0 {
		s.wakeWebhooks()
	}
	return r, nil
}

func (s *Service) resendable(ctx context.Context, t Tenant, endpointID string) error {
	e, err := s.store.WebhookEndpoint(ctx, t, endpointID)
	if err != nil {
		return err
	}
	if e.Disabled {
		return &StateError{Object: "webhook endpoint", State: "disabled", Action: "resend to"}
	}
	return nil
}

// ClaimWebhooks claims up to limit deliveries whose attempt is due, for
// the lease (WebhookLease, or SetWebhookLease's): no other claimant, in
// this process or another sharing the store, gets them meanwhile.
func (s *Service) ClaimWebhooks(ctx context.Context, limit int) ([]WebhookJob, error) {
	now := s.Now()
	lease := s.webhookLease
	if lease <= 0 {
		lease = WebhookLease
	}
	return s.store.ClaimWebhookDeliveries(ctx, now, now.Add(lease), ids.New(ids.WebhookAttempt), limit)
}

// CompleteWebhook records an attempt of a claimed delivery and schedules
// what follows: nothing after a success; after a failure the next retry,
// or, after the last, the delivery failed. An endpoint whose every attempt
// failed since this delivery's first is then disabled (DisabledFailing),
// with a webhook_endpoint.disabled event and an audit entry saying so.
func (s *Service) CompleteWebhook(ctx context.Context, job WebhookJob, r WebhookResult) error {
	ctx, l := withEvents(ctx)
	a := WebhookAttempt{ID: ids.New(ids.WebhookAttempt), Tenant: job.Delivery.Tenant, EndpointID: job.Delivery.EndpointID,
		EventID: job.Delivery.EventID, AttemptedAt: r.AttemptedAt, Duration: r.Duration, StatusCode: r.StatusCode,
		Error: r.Error, Succeeded: r.OK()}
	err := s.store.CompleteWebhookDelivery(ctx, job.Claim, &a, func(d *WebhookDelivery, e *WebhookEndpoint) error {
		l.events, l.audit = l.events[:0], l.audit[:0]
		now := s.Now()
		d.Attempts++
		d.LastAttemptAt, d.LastStatusCode, d.UpdatedAt = &a.AttemptedAt, r.StatusCode, now
		d.NextAttemptAt, a.NextAttemptAt = nil, nil
		if r.OK() {
			d.Status = DeliverySucceeded
			e.FailingSince = nil
			return nil
		}
		if e.FailingSince == nil {
			e.FailingSince = &a.AttemptedAt
		}
		if d.Step < len(WebhookSchedule) {
			next := now.Add(WebhookSchedule[d.Step])
			d.Step++
			d.NextAttemptAt, a.NextAttemptAt = &next, &next
			return nil
		}
		d.Status = DeliveryFailed
		if e.Disabled || e.FailingSince.After(d.CreatedAt) {
			return nil
		}
		e.Disabled, e.DisabledReason, e.UpdatedAt = true, DisabledFailing, now
		if s.render != nil {
			data, err := s.renderEndpoint(*e)
			if err != nil {
				return err
			}
			if err := s.record(ctx, l, []string{EventWebhookEndpointDisabled}, "webhook_endpoint", e.ID, e.Tenant, data); err != nil {
				return err
			}
		}
		detail, _ := json.Marshal(map[string]any{"reason": DisabledFailing, "failing_since": e.FailingSince.Format(auditTime),
			"last_event_id": d.EventID})
		l.audit = append(l.audit, AuditEvent{ID: ids.New(ids.AuditEvent), Tenant: e.Tenant, Action: AuditWebhookEndpointDisabled,
			ActorKind: ActorSystem, ObjectType: "webhook_endpoint", ObjectID: e.ID, Detail: detail, CreatedAt: now})
		return nil
	})
	return s.committed(l, err)
}

// renderEndpoint renders an endpoint for an event, as the API shows it
// (no secret).
func (s *Service) renderEndpoint(e WebhookEndpoint) (json.RawMessage, error) {
	e.Secret, e.PrevSecret = "", ""
	return s.render(e)
}
