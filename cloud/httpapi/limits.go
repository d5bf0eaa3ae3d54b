package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/svc-vms/svc/cloud"
)

// Defaults of the key-free pass link's limits, in requests per calendar
// minute (docs/decisions.md, "Hardening (issue 15)").
const (
	// DefaultPassLinkLimit is how often one pass link may be opened: a
	// visitor reloading the page every few seconds stays well inside it.
	DefaultPassLinkLimit = 20
	// DefaultPassAddressLimit is how many pass-link requests one client
	// address (an IPv4 address, an IPv6 /64) may make, links that are not
	// ours included: a busy guest network's visitors stay inside it, a
	// client walking links does not.
	DefaultPassAddressLimit = 120
)

// counted is one request counted against one per-minute budget.
type counted struct {
	limit int
	n     int64 // requests in the window, this one included
	reset int   // seconds until the window ends
}

func (b counted) remaining() int64 { return max(int64(b.limit)-b.n, 0) }
func (b counted) spent() bool      { return b.n > int64(b.limit) }

// count adds the request to the store's per-minute counter named key (a
// tenant's, or counterKey's) for the current calendar minute. Every limit
// shares the store's counters, so on PostgreSQL all API processes share
// every budget.
//
// A budget of 2*leaseFraction requests or more (400 a minute) is claimed
// a slice at a time (leaseSize): the process adds a slice to the shared
// counter and admits that many requests before it asks again, so a busy
// tenant's requests write the counter once a slice, not once each (on
// PostgreSQL a round trip and a row lock that every process's requests
// took turns on). A claim is granted only up to the budget, so the
// processes together never admit more than it; what a process claimed
// and did not use is lost when the minute ends, so a tenant at its
// budget may be refused at most a slice less one request early, per
// process. Smaller budgets count every request, as before
// (docs/decisions.md, "Rate limits").
func (s *Server) count(ctx context.Context, key cloud.Tenant, limit int) (counted, error) {
	now := s.now()
	window := now.Truncate(time.Minute)
	b := counted{limit: limit, reset: int(window.Add(time.Minute).Sub(now).Seconds() + 0.999)}
	size := leaseSize(limit)
	if size == 1 {
		n, err := s.svc.Store().CountRequests(ctx, key, window, 1)
		if err != nil {
			return counted{}, fmt.Errorf("count request: %w", err)
		}
		b.n = n
		return b, nil
	}
	l := s.leases.of(key, window)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.unused > 0:
		l.unused--
	case l.claimed && l.total >= int64(limit):
		// The budget is spent for the rest of the minute: the counter
		// only grows until then, so a refusal needs no claim.
		l.total++
	default:
		total, err := s.svc.Store().CountRequests(ctx, key, window, size)
		if err != nil {
			return counted{}, fmt.Errorf("count request: %w", err)
		}
		l.claimed = true
		before := total - size // what every process had claimed before
		granted := min(size, max(0, int64(limit)-before))
		if granted == 0 {
			l.total, l.unused = before+1, 0 // this request, refused
		} else {
			l.total, l.unused = before+granted, granted-1
		}
	}
	// The requests counted so far, this one included: the claims seen,
	// less what this process claimed and has not used.
	b.n = l.total - l.unused
	return b, nil
}

// leaseFraction is the share of a budget one claim takes: a slice of
// 1/200 of it, so a process's unused slice is at most half a percent of
// the budget. A budget under 400 a minute is counted request by request.
const leaseFraction = 200

// leaseSize is how many requests one claim on a budget of limit takes.
func leaseSize(limit int) int64 { return max(1, int64(limit)/leaseFraction) }

// leases are a process's claims on the current minute's budgets, by the
// counter's key. The map is replaced as each minute begins, so it holds
// one minute's tenants at most; a lease taken from the old map goes on
// serving its own minute's requests.
type leases struct {
	mu     sync.Mutex
	window time.Time
	m      map[cloud.Tenant]*lease
}

// lease is one budget's claim in one minute.
type lease struct {
	mu      sync.Mutex
	claimed bool  // a claim was made: total is the counter's
	total   int64 // the counter after the last claim, granted part only, plus refusals since
	unused  int64 // requests claimed and not yet admitted
}

// of returns the lease of key in the minute window, made if need be. A
// request of a minute already past gets a lease of its own, kept nowhere:
// it claims for itself.
func (ls *leases) of(key cloud.Tenant, window time.Time) *lease {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	switch {
	case window.Before(ls.window):
		return &lease{}
	case window.After(ls.window) || ls.m == nil:
		ls.window, ls.m = window, map[cloud.Tenant]*lease{}
	}
	l := ls.m[key]
	if l == nil {
		l = &lease{}
		ls.m[key] = l
	}
	return l
}

// limitHeaders sets the RateLimit headers from the budget with the fewest
// requests left, and Retry-After when that budget is spent; it returns the
// budget and whether it is spent.
func limitHeaders(c echo.Context, budgets ...counted) (counted, bool) {
	tight := budgets[0]
	for _, b := range budgets[1:] {
		if b.remaining() < tight.remaining() || b.spent() && !tight.spent() {
			tight = b
		}
	}
	h := c.Response().Header()
	h.Set(headerLimit, strconv.Itoa(tight.limit))
	h.Set(headerRemaining, strconv.FormatInt(tight.remaining(), 10))
	h.Set(headerReset, strconv.Itoa(tight.reset))
	if tight.spent() {
		h.Set(headerRetryAfter, strconv.Itoa(tight.reset))
	}
	return tight, tight.spent()
}

// counterKey names a per-minute counter that is not a tenant's. The store
// keys its counters by tenant; organisation IDs start with org_, so these
// never meet one.
func counterKey(kind, id string) cloud.Tenant {
	return cloud.Tenant{OrgID: kind + ":" + id, Mode: "counter"}
}

// passLimits are the key-free pass link's budgets per minute.
type passLimits struct {
	link, address int
}

// clientAddrs derives the address a request is limited by: the peer's
// address, unless the peer is a trusted proxy, in which case
// X-Forwarded-For is read from its right-hand end, skipping trusted
// proxies, and the first address that is not one is the client. Entries to
// the left of it were written by the client and are ignored, so a client
// cannot choose its own address. Without trusted proxies (the default)
// X-Forwarded-For is never read.
type clientAddrs struct {
	trusted []netip.Prefix
}

func (ca clientAddrs) isTrusted(a netip.Addr) bool {
	for _, p := range ca.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// of returns the client's address; the zero Addr when the peer's address
// does not parse (a listener that is not TCP).
func (ca clientAddrs) of(r *http.Request) netip.Addr {
	client := peerAddr(r.RemoteAddr)
	if !client.IsValid() || !ca.isTrusted(client) {
		return client
	}
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(v, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a := hopAddr(strings.TrimSpace(hops[i]))
		if !a.IsValid() {
			break // what a trusted proxy did not write is not read: keep the last hop known
		}
		client = a
		if !ca.isTrusted(a) {
			break
		}
	}
	return client
}

// peerAddr reads a RemoteAddr, host:port.
func peerAddr(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap().WithZone("")
}

// hopAddr reads one X-Forwarded-For entry: an address, or an address with
// a port as some proxies write it (1.2.3.4:5, [2001:db8::1]:5).
func hopAddr(s string) netip.Addr {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone("")
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	return netip.Addr{}
}

// addressBucket is what one client address counts as: an IPv4 address, or
// the /64 an IPv6 address is in (one host usually holds a whole /64, so a
// client could otherwise take a new budget per address).
func addressBucket(a netip.Addr) string {
	a = a.Unmap()
	switch {
	case !a.IsValid():
		return "unknown"
	case a.Is4():
		return a.String()
	}
	p, _ := a.Prefix(64)
	return p.String()
}
