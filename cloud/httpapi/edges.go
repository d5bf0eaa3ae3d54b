package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/edgeauth"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/problem"
)

// EdgeBroker is how enrolled appliances reach the MQTT broker: what an
// appliance's configuration says (Config.EdgeBroker).
type EdgeBroker struct {
	URL string // ssl://host:8883, or tcp:// to a broker on the appliance
	CA  []byte // PEM of the CA that verifies an ssl:// broker; nil: the appliance's system roots
}

// Limits of the key-free enrolment operations, per calendar minute.
const (
	// EnrolAddressLimit is how many codes one client address (an IPv4
	// address, an IPv6 /64) may ask for: a site enrolling a few
	// appliances at once stays inside it, a client walking keys does not.
	EnrolAddressLimit = 10
	// EnrolPollLimit is how often one appliance may poll: the appliance
	// polls every EnrolPollInterval.
	EnrolPollLimit = 30
	// EnrolPollInterval is how often an appliance is told to poll.
	EnrolPollInterval = 5 * time.Second
)

// enrolmentJSON is the appliance's view of its enrolment: the answer of
// POST /v1/enrolments and GET /v1/enrolments/self.
type enrolmentJSON struct {
	Object           string         `json:"object"`
	State            string         `json:"state"`
	Code             *string        `json:"code"`
	ExpiresAt        *string        `json:"expires_at"`
	PollAfter        int            `json:"poll_interval_seconds"`
	ClockSkew        float64        `json:"clock_skew_seconds"`
	ClockSkewWarning bool           `json:"clock_skew_warning"`
	Configuration    *enrolConfJSON `json:"configuration"`
}

// enrolConfJSON is what an appliance needs before its first connection,
// delivered once its code is claimed: the rest reaches it on the feed.
type enrolConfJSON struct {
	EdgeID string          `json:"edge_id"`
	Name   string          `json:"name"`
	Site   enrolSiteJSON   `json:"site"`
	Broker enrolBrokerJSON `json:"broker"`
	Gates  []enrolGateJSON `json:"gates"`
}

type enrolSiteJSON struct {
	Mode     string `json:"mode"`
	OrgID    string `json:"org_id"`
	SiteID   string `json:"site_id"`
	Name     string `json:"name"`
	TimeZone string `json:"time_zone"`
}

type enrolBrokerJSON struct {
	URL      string  `json:"url"`
	Username string  `json:"username"`
	Password string  `json:"password"`
	CA       *string `json:"ca"`
}

type enrolGateJSON struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Direction string `json:"direction"`
}

func seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

func skewWarning(d time.Duration) bool { return d > cloud.SkewTolerance || d < -cloud.SkewTolerance }

// signed verifies the appliance's signature on the request, or returns
// 401 unauthorized saying why: a clock too far off is told with its skew.
func (s *Server) signed(c echo.Context) (edgeauth.Signed, error) {
	sig, err := edgeauth.Verify(c.Request(), s.now())
	switch {
	case errors.Is(err, edgeauth.ErrSkew):
		return sig, newError(problem.Unauthorized, "The appliance's clock is %s from the cloud's, more than the %s a signed request may be: set its clock (NTP) and retry.",
			sig.Skew.Round(time.Second), edgeauth.MaxSkew)
	case err != nil:
		return sig, newError(problem.Unauthorized, "This operation takes a request signed with the appliance's identity key (%s, %s, %s headers): %v.",
			edgeauth.HeaderKey, edgeauth.HeaderTime, edgeauth.HeaderSignature, err)
	}
	return sig, nil
}

// limited counts the request against a key-free per-minute budget and
// returns 429 rate_limited when it is spent.
func (s *Server) limited(c echo.Context, kind, id string, limit int) error {
	b, err := s.count(c.Request().Context(), counterKey(kind, id), limit)
	if err != nil {
		return err
	}
	if _, spent := limitHeaders(c, b); spent {
		noted(c).limit = strings.ReplaceAll(kind, "-", "_")
		return newError(problem.RateLimited, "Too many enrolment requests from here this minute; retry after the seconds in Retry-After.")
	}
	return nil
}

// requestEnrolment is POST /v1/enrolments: no key, a signed request.
func (s *Server) requestEnrolment(c echo.Context) error {
	if err := s.limited(c, "enrol-address", addressBucket(s.clients.of(c.Request())), EnrolAddressLimit); err != nil {
		return err
	}
	sig, err := s.signed(c)
	if err != nil {
		return err
	}
	if b := string(sig.Body); b != "" && b != "{}" {
		return invalid("body", "must be empty or {}")
	}
	code, en, err := s.svc.RequestEnrolment(c.Request().Context(), sig.Key, s.clients.of(c.Request()).String(), sig.Skew)
	if errors.Is(err, cloud.ErrEnrolled) {
		return newError(problem.InvalidState, "This appliance is enrolled already (%v); revoke its edge to enrol it again.", err)
	}
	if err != nil {
		return err
	}
	out := s.renderEnrolment(cloud.EnrolmentPoll{State: cloud.EnrolmentWaiting, Enrolment: en}, sig.Skew)
	if code == "" {
		out.State = cloud.EnrolmentClaimed
		return c.JSON(http.StatusOK, out)
	}
	shown := cloud.FormatEnrolmentCode(code)
	out.Code = &shown
	return c.JSON(http.StatusCreated, out)
}

// pollEnrolment is GET /v1/enrolments/self: no key, a signed request.
func (s *Server) pollEnrolment(c echo.Context) error {
	sig, err := s.signed(c)
	if err != nil {
		return err
	}
	if err := s.limited(c, "enrol-poll", edgeauth.EncodeKey(sig.Key), EnrolPollLimit); err != nil {
		return err
	}
	if s.broker.URL == "" {
		return newError(problem.InvalidState, "This cloud has no MQTT broker for appliances to connect to, so none can be enrolled.")
	}
	p, err := s.svc.PollEnrolment(c.Request().Context(), sig.Key, sig.Skew)
	if errors.Is(err, cloud.ErrNotFound) {
		return newError(problem.NotFound, "This appliance has not asked for an enrolment code: POST /v1/enrolments first.")
	}
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store") // it may carry a password
	return c.JSON(http.StatusOK, s.renderEnrolment(p, sig.Skew))
}

func (s *Server) renderEnrolment(p cloud.EnrolmentPoll, skew time.Duration) enrolmentJSON {
	out := enrolmentJSON{Object: "enrolment", State: p.State, PollAfter: int(EnrolPollInterval / time.Second),
		ClockSkew: seconds(skew), ClockSkewWarning: skewWarning(skew)}
	if p.Enrolment.ClaimedAt == nil {
		out.ExpiresAt = tsPtr(&p.Enrolment.ExpiresAt)
	}
	if p.State == cloud.EnrolmentClaimed && p.Password != "" {
		conf := &enrolConfJSON{EdgeID: p.Edge.ID, Name: p.Edge.Name,
			Site: enrolSiteJSON{Mode: string(p.Edge.Tenant.Mode), OrgID: p.Edge.Tenant.OrgID, SiteID: p.Edge.SiteID,
				Name: p.Site.Name, TimeZone: p.Site.Timezone},
			Broker: enrolBrokerJSON{URL: s.broker.URL, Username: p.Edge.Username, Password: p.Password},
			Gates:  make([]enrolGateJSON, 0, len(p.Gates))}
		if len(s.broker.CA) > 0 {
			ca := string(s.broker.CA)
			conf.Broker.CA = &ca
		}
		for _, g := range p.Gates {
			conf.Gates = append(conf.Gates, enrolGateJSON{ID: g.ID, Name: g.Name, Direction: string(g.Direction)})
		}
		out.Configuration = conf
	}
	return out
}

// Edges: the fleet.

type edgeJSON struct {
	ID               string          `json:"id"`
	Object           string          `json:"object"`
	SiteID           string          `json:"site_id"`
	Name             string          `json:"name"`
	State            string          `json:"state"`
	OfflineSince     *string         `json:"offline_since"`
	LastContactAt    *string         `json:"last_contact_at"`
	SoftwareVersion  *string         `json:"software_version"`
	AppliedSeq       uint64          `json:"applied_seq"`
	FeedHead         uint64          `json:"feed_head"`
	Lag              uint64          `json:"lag"`
	Outbox           edgeOutboxJSON  `json:"outbox"`
	Cache            *edgeCacheJSON  `json:"cache"`
	ClockSkew        *float64        `json:"clock_skew_seconds"`
	ClockSkewWarning bool            `json:"clock_skew_warning"`
	DiskFree         *uint64         `json:"disk_free_bytes"`
	Enrolled         bool            `json:"enrolled_by_code"`
	EnrolledAt       string          `json:"enrolled_at"`
	RevokedAt        *string         `json:"revoked_at"`
	Update           *edgeUpdateJSON `json:"update"`
	Hardware         json.RawMessage `json:"hardware"`
	HardwareError    *string         `json:"hardware_error"`
}

type edgeOutboxJSON struct {
	Depth        int     `json:"depth"`
	OldestFactAt *string `json:"oldest_fact_at"`
}

// edgeUpdateJSON is what an appliance last said of its updates.
type edgeUpdateJSON struct {
	Version         string          `json:"version"`
	Slot            *string         `json:"slot"`
	State           string          `json:"state"`
	TargetVersion   *string         `json:"target_version"`
	DownloadedBytes int64           `json:"downloaded_bytes"`
	SizeBytes       *int64          `json:"size_bytes"`
	Error           *string         `json:"error"`
	LastResult      *edgeResultJSON `json:"last_result"`
	PolledAt        string          `json:"polled_at"`
}

type edgeResultJSON struct {
	Version string  `json:"version"`
	Outcome string  `json:"outcome"`
	Reason  *string `json:"reason"`
	At      string  `json:"at"`
}

func renderEdgeUpdate(u *cloud.EdgeUpdate) *edgeUpdateJSON {
	if u == nil {
		return nil
	}
	out := &edgeUpdateJSON{Version: u.Version, Slot: nullable(u.Slot), State: u.State, TargetVersion: nullable(u.Target),
		DownloadedBytes: u.Bytes, Error: nullable(u.Error), PolledAt: ts(u.PolledAt)}
	if u.Size > 0 {
		out.SizeBytes = &u.Size
	}
	if u.LastOutcome != "" && u.LastAt != nil {
		out.LastResult = &edgeResultJSON{Version: u.LastVersion, Outcome: u.LastOutcome, Reason: nullable(u.LastReason), At: ts(*u.LastAt)}
	}
	return out
}

type edgeCacheJSON struct {
	Visits int `json:"visits"`
	People int `json:"people"`
	Gates  int `json:"gates"`
	Keys   int `json:"keys"`
}

func renderEdge(e cloud.Edge) edgeJSON {
	out := edgeJSON{ID: e.ID, Object: "edge", SiteID: e.SiteID, Name: e.Name, State: e.State,
		LastContactAt: tsPtr(e.LastSeenAt), SoftwareVersion: nullable(e.Software), AppliedSeq: e.Seq, FeedHead: e.Head,
		Outbox: edgeOutboxJSON{Depth: e.Outbox, OldestFactAt: tsPtr(e.OutboxOldest)}, DiskFree: e.DiskFree,
		Enrolled: e.IdentityKey != nil, EnrolledAt: ts(e.CreatedAt), RevokedAt: tsPtr(e.RevokedAt), ClockSkewWarning: e.SkewWarning(),
		Update: renderEdgeUpdate(e.Update)}
	if e.Head > e.Seq {
		out.Lag = e.Head - e.Seq
	}
	if e.State == cloud.EdgeOffline {
		out.OfflineSince = tsPtr(e.StateSince)
	}
	if e.Outbox == 0 {
		out.Outbox.OldestFactAt = nil
	}
	if e.Cache != nil {
		out.Cache = &edgeCacheJSON{Visits: e.Cache.Visits, People: e.Cache.People, Gates: e.Cache.Gates, Keys: e.Cache.Keys}
	}
	if e.Skew != nil {
		v := seconds(*e.Skew)
		out.ClockSkew = &v
	}
	out.Hardware, out.HardwareError = renderHardware(e.Hardware), nullable(e.HardwareError)
	return out
}

func (s *Server) listEdges(c echo.Context) error {
	q, err := parseQuery(c, "limit", "cursor", "site_id", "state")
	if err != nil {
		return err
	}
	t := tenant(c)
	siteID := q.id("site_id", ids.Site)
	state, _ := q.get("state")
	if state != "" && state != cloud.EdgeOnline && state != cloud.EdgeOffline {
		q.errs.add("query.state", "must be online or offline")
	}
	scope := "edges\x00" + t.OrgID + "\x00" + string(t.Mode) + "\x00" + siteID + "\x00" + state
	p := s.page(q, scope)
	if err := s.checkFilters(c.Request().Context(), q, t); err != nil {
		return err
	}
	// A site has one appliance, so an organisation's edges are few: they
	// are read whole and paged here, newest first as every list is.
	all, err := s.svc.Edges(c.Request().Context(), t, siteID)
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b cloud.Edge) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	rows := make([]cloud.Edge, 0, p.Limit+1)
	for _, e := range all {
		if state != "" && e.State != state {
			continue
		}
		if p.After != nil && cmp.Or(e.CreatedAt.Compare(p.After.CreatedAt), cmp.Compare(e.ID, p.After.ID)) >= 0 {
			continue
		}
		rows = append(rows, e)
		if len(rows) > p.Limit {
			break
		}
	}
	more := len(rows) > p.Limit
	if more {
		rows = rows[:p.Limit]
	}
	return c.JSON(http.StatusOK, pageOf(s, rows, more, scope, func(e cloud.Edge) cloud.Position {
		return cloud.Position{CreatedAt: e.CreatedAt, ID: e.ID}
	}, renderEdge))
}

func (s *Server) getEdge(c echo.Context) error {
	id, err := pathID(c, "edge_id", ids.Edge)
	if err != nil {
		return err
	}
	e, err := s.svc.Edge(c.Request().Context(), tenant(c), id)
	if errors.Is(err, cloud.ErrNotFound) {
		return notFound("edge", id)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, renderEdge(e))
}

type claimInput struct {
	Code, SiteID, Name cloud.Optional[string]
}

// claimEdge is POST /v1/edges: an installer claims an appliance's code.
func (s *Server) claimEdge(c echo.Context) error {
	in, err := decode(c, false, func(b *body) claimInput {
		in := claimInput{Code: b.str("code"), SiteID: b.str("site_id"), Name: b.str("name")}
		if !in.Code.Set {
			b.errs.add(b.loc("code"), "is required: the code the appliance shows")
		}
		if !in.SiteID.Set {
			b.errs.add(b.loc("site_id"), "is required")
		}
		return in
	}, func(context.Context, claimInput) error { return nil })
	if err != nil {
		return err
	}
	send := answer(c, answerCreated(at("/v1/edges/", func(e cloud.Edge) string { return e.ID }), renderEdge))
	e, err := s.svc.ClaimEnrolment(c.Request().Context(), tenant(c), in.Code.Value, in.SiteID.Value, in.Name.Value)
	if err != nil {
		return err
	}
	return send(e)
}

func (s *Server) revokeEdge(c echo.Context) error {
	id, err := pathID(c, "edge_id", ids.Edge)
	if err != nil {
		return err
	}
	send := answer(c, answerOK(renderEdge))
	e, err := s.svc.RevokeEdge(c.Request().Context(), tenant(c), id)
	if errors.Is(err, cloud.ErrNotFound) {
		return notFound("edge", id)
	}
	if err != nil {
		return err
	}
	return send(e.Presented(s.now()))
}
