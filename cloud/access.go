package cloud

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"strings"
	"time"
)

// Plan is an organisation's subscription level.
type Plan string

// The plans, lowest first.
const (
	PlanFree       Plan = "free"
	PlanGrowth     Plan = "growth"
	PlanPro        Plan = "pro"
	PlanEnterprise Plan = "enterprise"
)

// Plans lists every plan, lowest first.
var Plans = []Plan{PlanFree, PlanGrowth, PlanPro, PlanEnterprise}

// Rank orders plans: a higher rank includes everything a lower one does.
// An unknown plan ranks below free.
func (p Plan) Rank() int {
	for i, q := range Plans {
		if p == q {
			return i
		}
	}
	return -1
}

// Valid reports whether p is a known plan.
func (p Plan) Valid() bool { return p.Rank() >= 0 }

// Includes reports whether p is min or above.
func (p Plan) Includes(min Plan) bool { return p.Rank() >= min.Rank() }

// DefaultRateLimits are requests per minute, per organisation and mode
// (docs/decisions.md).
var DefaultRateLimits = map[Plan]int{
	PlanFree:       120,
	PlanGrowth:     600,
	PlanPro:        3000,
	PlanEnterprise: 12000,
}

// Scope is a permission a secret key carries. Each endpoint needs one.
type Scope string

// The 22 scopes, in the order docs/decisions.md lists them.
const (
	ScopeOrganisationRead Scope = "organisation:read"
	ScopeSitesRead        Scope = "sites:read"
	ScopeSitesWrite       Scope = "sites:write"
	ScopePeopleRead       Scope = "people:read"
	ScopePeopleWrite      Scope = "people:write"
	ScopeVisitsRead       Scope = "visits:read"
	ScopeVisitsWrite      Scope = "visits:write"
	ScopeVisitorsRead     Scope = "visitors:read"
	ScopeVisitorsWrite    Scope = "visitors:write"
	ScopeDeliveriesRead   Scope = "deliveries:read"
	ScopeDeliveriesWrite  Scope = "deliveries:write"
	ScopeBookingsRead     Scope = "bookings:read"
	ScopeBookingsWrite    Scope = "bookings:write"
	ScopeAttendanceRead   Scope = "attendance:read"
	ScopeAttendanceWrite  Scope = "attendance:write"
	ScopeWatchlistRead    Scope = "watchlist:read"
	ScopeWatchlistWrite   Scope = "watchlist:write"
	ScopeRollCallsWrite   Scope = "roll_calls:write"
	ScopeWebhooksWrite    Scope = "webhooks:write"
	ScopeEventsRead       Scope = "events:read"
	ScopeAuditRead        Scope = "audit:read"
	ScopeFormsRead        Scope = "forms:read"
)

// Scopes lists all 22 scopes.
var Scopes = []Scope{
	ScopeOrganisationRead, ScopeSitesRead, ScopeSitesWrite, ScopePeopleRead, ScopePeopleWrite,
	ScopeVisitsRead, ScopeVisitsWrite, ScopeVisitorsRead, ScopeVisitorsWrite,
	ScopeDeliveriesRead, ScopeDeliveriesWrite, ScopeBookingsRead, ScopeBookingsWrite,
	ScopeAttendanceRead, ScopeAttendanceWrite, ScopeWatchlistRead, ScopeWatchlistWrite,
	ScopeRollCallsWrite, ScopeWebhooksWrite, ScopeEventsRead, ScopeAuditRead, ScopeFormsRead,
}

// Valid reports whether s is one of the 22 scopes.
func (s Scope) Valid() bool {
	for _, q := range Scopes {
		if s == q {
			return true
		}
	}
	return false
}

// KeyKind says where a key may be used.
type KeyKind string

// The key kinds.
const (
	KindSecret      KeyKind = "secret"
	KindPublishable KeyKind = "publishable"
)

// APIKey is a credential as stored: the key itself is never kept, only its
// SHA-256 hash.
type APIKey struct {
	ID        string
	Tenant    Tenant
	Kind      KeyKind
	Scopes    []Scope // nil for publishable keys, whose rights are fixed
	Hash      []byte
	Last4     string
	CreatedAt time.Time
	RevokedAt *time.Time
}

// Has reports whether the key carries scope s.
func (k APIKey) Has(s Scope) bool {
	for _, q := range k.Scopes {
		if q == s {
			return true
		}
	}
	return false
}

// Principal is who a request acts as: a key, its organisation's plan.
type Principal struct {
	Key  APIKey
	Plan Plan
}

// Tenant is the organisation and mode the principal acts in.
func (p Principal) Tenant() Tenant { return p.Key.Tenant }

// ErrMalformedKey is returned by ParseKey when a token is not shaped like
// one of the four kinds of key.
var ErrMalformedKey = errors.New("malformed key")

const (
	keyBodyLen  = 32
	keyAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

func keyPrefix(kind KeyKind, mode Mode) string {
	k := "sk"
	if kind == KindPublishable {
		k = "pk"
	}
	return "svc_" + k + "_" + string(mode) + "_"
}

// NewKeySecret returns a fresh key string of the kind and mode (for
// example svc_sk_test_ and 32 base62 characters, about 190 bits).
func NewKeySecret(kind KeyKind, mode Mode) string {
	return keyPrefix(kind, mode) + keyBody()
}

// keyBody is 32 random base62 characters, about 190 bits.
func keyBody() string {
	var b [keyBodyLen]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	for i := range b {
		// 256 is not a multiple of 62; rejection sampling would be exact,
		// the bias of this reduction (under 1 in 2^6 per symbol) costs
		// less than a bit of the 190.
		b[i] = keyAlphabet[int(b[i])%len(keyAlphabet)]
	}
	return string(b[:])
}

// ParseKey checks a presented token's shape and returns its kind, mode and
// the hash it is stored under. It returns ErrMalformedKey for anything that
// is not one of the four prefixes followed by 32 base62 characters.
func ParseKey(token string) (KeyKind, Mode, []byte, error) {
	var kind KeyKind
	var mode Mode
	switch {
	case strings.HasPrefix(token, "svc_sk_live_"):
		kind, mode = KindSecret, ModeLive
	case strings.HasPrefix(token, "svc_sk_test_"):
		kind, mode = KindSecret, ModeTest
	case strings.HasPrefix(token, "svc_pk_live_"):
		kind, mode = KindPublishable, ModeLive
	case strings.HasPrefix(token, "svc_pk_test_"):
		kind, mode = KindPublishable, ModeTest
	default:
		return "", "", nil, ErrMalformedKey
	}
	body := token[len("svc_sk_live_"):]
	if len(body) != keyBodyLen {
		return "", "", nil, ErrMalformedKey
	}
	for i := 0; i < len(body); i++ {
		if strings.IndexByte(keyAlphabet, body[i]) < 0 {
			return "", "", nil, ErrMalformedKey
		}
	}
	return kind, mode, HashKey(token), nil
}

// HashKey is how keys are stored. Keys carry 190 random bits, so a fast
// hash is enough: there is nothing to brute-force.
func HashKey(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Limits are what a plan allows in live mode; test mode allows what
// Enterprise does (docs/decisions.md, "Plan limits").
type Limits struct {
	Hosts       int  // people a visit may be for
	HistoryDays int  // how far back records stay visible; 0: no limit
	PassRules   bool // whether visits may carry pass rules
}

var planLimits = map[Plan]Limits{
	PlanFree:       {Hosts: 1, HistoryDays: 30, PassRules: false},
	PlanGrowth:     {Hosts: 3, HistoryDays: 90, PassRules: true},
	PlanPro:        {Hosts: 5, HistoryDays: 365, PassRules: true},
	PlanEnterprise: {Hosts: 10, HistoryDays: 0, PassRules: true},
}

// Limits returns the plan's limits.
func (p Plan) Limits() Limits { return planLimits[p] }

// Actor is who asks the service to act: a key of a tenant on a plan.
type Actor struct {
	Tenant      Tenant
	KeyID       string
	Publishable bool
	Plan        Plan
}

// ActorOf returns the actor a principal's requests act as.
func ActorOf(p Principal) Actor {
	return Actor{Tenant: p.Key.Tenant, KeyID: p.Key.ID, Publishable: p.Key.Kind == KindPublishable, Plan: p.Plan}
}

// Limits are the limits that bind the actor: its plan's in live mode,
// Enterprise's in test mode.
func (a Actor) Limits() Limits {
	if a.Tenant.Mode == ModeTest {
		return PlanEnterprise.Limits()
	}
	return a.Plan.Limits()
}
