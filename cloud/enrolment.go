package cloud

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/ids"
)

// This file is enrolment by a one-time code (docs/decisions.md,
// "Enrolment (issue 17)"): an appliance with its own Ed25519 identity key
// asks for a code (RequestEnrolment), an installer claims the code for a
// site (ClaimEnrolment), and the appliance's next signed poll
// (PollEnrolment) gets its edge, site and broker credentials. The
// signatures are checked by the transport (shared/edgeauth); here the key
// is an identity the transport vouches for.

// Enrolment figures.
const (
	// EnrolmentCodeLen is a code's length: 8 Crockford base-32 characters
	// (40 bits), shown as XXXX-XXXX.
	EnrolmentCodeLen = 8
	// EnrolmentTTL is how long a code may be claimed: long enough for an
	// installer to walk from the appliance to a laptop, short enough that
	// a code read off a screen is soon worthless.
	EnrolmentTTL = 15 * time.Minute
	// ClaimAttempts is how many wrong codes a tenant may try in
	// ClaimLockout before its claims are refused until the oldest of
	// them is ClaimLockout old.
	ClaimAttempts = 5
	// ClaimLockout is the window ClaimAttempts counts in.
	ClaimLockout = 15 * time.Minute
	// SkewTolerance is how far an appliance's clock may be from the
	// cloud's before the skew is shown as a problem (Edge.SkewWarning).
	// Pass windows are minutes wide and facts carry the gate's time, so
	// 30 seconds is well inside what the gate's decisions tolerate.
	SkewTolerance = 30 * time.Second
	// EnrolmentRetention is how long enrolment keeps what it no longer
	// needs (PurgeEnrolments): a code that expired unclaimed, a wrong
	// code tried (ClaimLockout counts only the last 15 minutes), an
	// enrolment whose edge has connected or was revoked. For a day a late
	// claim of an expired code is told it expired rather than counted as
	// a wrong code, and a late poll is told its code expired.
	EnrolmentRetention = 24 * time.Hour
)

// crockford is Crockford's base-32 alphabet: no I, L, O or U, so a code
// read aloud or off a small screen is not misread.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// The states of an enrolment as its appliance sees it.
const (
	EnrolmentWaiting  = "waiting"  // a code to claim
	EnrolmentExpired  = "expired"  // the code expired unclaimed: ask for another
	EnrolmentClaimed  = "claimed"  // claimed: the poll carries the configuration
	EnrolmentEnrolled = "enrolled" // the edge has connected: nothing more to deliver
	EnrolmentRevoked  = "revoked"  // the edge was revoked
)

// Enrolment is an appliance's request to be enrolled, keyed by its
// identity key. The code itself is never stored: only its SHA-256.
type Enrolment struct {
	PublicKey ed25519.PublicKey
	CodeHash  []byte
	CreatedAt time.Time
	ExpiresAt time.Time
	Address   string        // the client address that asked, for the audit of a claim
	Skew      time.Duration // the appliance's clock minus the cloud's, at its last request
	ClaimedAt *time.Time
	Tenant    Tenant // set once claimed
	EdgeID    string // set once claimed
}

// Enrolment errors.
var (
	// ErrEnrolmentExpired is returned by ClaimEnrolment for a code whose
	// EnrolmentTTL has passed.
	ErrEnrolmentExpired = errors.New("the enrolment code has expired")
	// ErrEnrolmentUsed is returned by ClaimEnrolment for a code claimed
	// before: a code works once.
	ErrEnrolmentUsed = errors.New("the enrolment code was used")
	// ErrEnrolled is returned by RequestEnrolment for a key that is
	// already an edge's identity.
	ErrEnrolled = errors.New("the appliance is enrolled")
)

// AttemptsError is returned by ClaimEnrolment while the tenant is locked
// out after ClaimAttempts wrong codes: claims are refused until Until.
type AttemptsError struct {
	Until time.Time
}

func (e *AttemptsError) Error() string {
	return fmt.Sprintf("too many wrong enrolment codes: claims are refused until %s", e.Until.UTC().Format(time.RFC3339))
}

// NewEnrolmentCode returns a random code of EnrolmentCodeLen characters.
func NewEnrolmentCode() string {
	var b [EnrolmentCodeLen]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	for i := range b {
		b[i] = crockford[b[i]&31] // 256 is a multiple of 32: no bias
	}
	return string(b[:])
}

// FormatEnrolmentCode shows a code as XXXX-XXXX.
func FormatEnrolmentCode(code string) string {
	if len(code) != EnrolmentCodeLen {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// NormaliseEnrolmentCode reads a code as a person may type it: any case,
// with dashes or spaces, and the letters Crockford reads as digits (I and
// L as 1, O as 0). ok is false when it is not a code.
func NormaliseEnrolmentCode(s string) (code string, ok bool) {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch r {
		case '-', ' ':
			continue
		case 'I', 'L':
			r = '1'
		case 'O':
			r = '0'
		}
		if r > 127 || !strings.ContainsRune(crockford, r) {
			return "", false
		}
		b.WriteRune(r)
	}
	if b.Len() != EnrolmentCodeLen {
		return "", false
	}
	return b.String(), true
}

// RequestEnrolment gives the appliance with identity key pub a new code,
// valid for EnrolmentTTL: a second request replaces the first's code, so
// an appliance asks again when its code expires. skew is its clock minus
// the cloud's, address the client's. It returns the code and the
// enrolment; ErrEnrolled when pub is the identity of an edge that is not
// revoked, and a claimed enrolment (Enrolment.ClaimedAt set, no code)
// when it was claimed and not yet collected.
func (s *Service) RequestEnrolment(ctx context.Context, pub ed25519.PublicKey, address string, skew time.Duration) (string, Enrolment, error) {
	if len(pub) != ed25519.PublicKeySize {
		return "", Enrolment{}, fmt.Errorf("request enrolment: %d bytes, not an Ed25519 public key", len(pub))
	}
	if e, err := s.store.EdgeByIdentity(ctx, pub); err == nil && e.RevokedAt == nil {
		return "", Enrolment{}, fmt.Errorf("request enrolment: %w as edge %s", ErrEnrolled, e.ID)
	} else if err != nil && !errors.Is(err, ErrNotFound) {
		return "", Enrolment{}, fmt.Errorf("request enrolment: %w", err)
	}
	now := s.Now()
	if en, err := s.store.Enrolment(ctx, pub); err == nil && en.ClaimedAt != nil {
		if e, err := s.store.Edge(ctx, en.EdgeID); err == nil && e.RevokedAt == nil {
			return "", en, nil
		}
		// Its edge was revoked: the appliance may be enrolled again.
	} else if err != nil && !errors.Is(err, ErrNotFound) {
		return "", Enrolment{}, fmt.Errorf("request enrolment: %w", err)
	}
	code := NewEnrolmentCode()
	en := Enrolment{PublicKey: pub, CodeHash: HashKey(code), CreatedAt: now, ExpiresAt: now.Add(EnrolmentTTL), Address: address, Skew: skew}
	if err := s.store.PutEnrolment(ctx, en); err != nil {
		return "", Enrolment{}, fmt.Errorf("request enrolment: %w", err)
	}
	return code, en, nil
}

// EnrolmentPoll is what an appliance's poll answers.
type EnrolmentPoll struct {
	State     string // Enrolment*
	Enrolment Enrolment
	// Edge and Password are set in EnrolmentClaimed: the edge made for
	// the appliance and a broker password minted for this answer.
	Edge     Edge
	Password string
	Gates    []Gate // the site's gates, oldest first, in EnrolmentClaimed
	Site     Site   // the edge's site, in EnrolmentClaimed
}

// PollEnrolment answers the appliance with identity key pub, whose clock
// is skew ahead of the cloud's. Once claimed, and until the edge first
// connects to the broker, each poll mints a new broker password (stored
// hashed, as every edge's is, so it is never kept in clear): an answer
// lost on the way is made good by the next poll, and the previous
// password stops working. ErrNotFound when pub has not asked for a code;
// ErrBrokerUnavailable (wrapped) when the broker account cannot be given
// the password (putBrokerAccount), and the appliance polls again.
func (s *Service) PollEnrolment(ctx context.Context, pub ed25519.PublicKey, skew time.Duration) (EnrolmentPoll, error) {
	en, err := s.store.Enrolment(ctx, pub)
	if err != nil {
		return EnrolmentPoll{}, fmt.Errorf("poll enrolment: %w", err)
	}
	en.Skew = skew
	now := s.Now()
	if en.ClaimedAt == nil {
		if err := s.store.EnrolmentSkew(ctx, pub, skew); err != nil {
			return EnrolmentPoll{}, fmt.Errorf("poll enrolment: %w", err)
		}
		if !now.Before(en.ExpiresAt) {
			return EnrolmentPoll{State: EnrolmentExpired, Enrolment: en}, nil
		}
		return EnrolmentPoll{State: EnrolmentWaiting, Enrolment: en}, nil
	}
	e, err := s.store.Edge(ctx, en.EdgeID)
	if err != nil {
		return EnrolmentPoll{}, fmt.Errorf("poll enrolment: edge %s: %w", en.EdgeID, err)
	}
	switch {
	case e.RevokedAt != nil:
		return EnrolmentPoll{State: EnrolmentRevoked, Enrolment: en, Edge: e}, nil
	case e.LastSeenAt != nil:
		return EnrolmentPoll{State: EnrolmentEnrolled, Enrolment: en, Edge: e}, nil
	}
	site, err := s.store.Site(ctx, e.Tenant, e.SiteID)
	if err != nil {
		return EnrolmentPoll{}, fmt.Errorf("poll enrolment: site %s: %w", e.SiteID, err)
	}
	gates, err := s.SiteGates(ctx, e.Tenant, e.SiteID)
	if err != nil {
		return EnrolmentPoll{}, fmt.Errorf("poll enrolment: %w", err)
	}
	secret := edgeSecretPrefix + keyBody()
	if err := s.putBrokerAccount(ctx, e, secret); err != nil {
		return EnrolmentPoll{}, fmt.Errorf("poll enrolment: %w", err)
	}
	if err := s.store.SetEdgeSecret(ctx, e.ID, HashKey(secret), skew, now); err != nil {
		return EnrolmentPoll{}, fmt.Errorf("poll enrolment: %w", err)
	}
	return EnrolmentPoll{State: EnrolmentClaimed, Enrolment: en, Edge: e, Password: secret, Gates: gates, Site: site}, nil
}

// SiteGates returns every gate of the site, oldest first.
func (s *Service) SiteGates(ctx context.Context, t Tenant, siteID string) ([]Gate, error) {
	var out []Gate
	p := Page{Limit: 100}
	for {
		gs, more, err := s.store.ListGates(ctx, t, GateFilter{SiteID: siteID}, p)
		if err != nil {
			return nil, err
		}
		out = append(out, gs...)
		if !more || len(gs) == 0 {
			break
		}
		last := gs[len(gs)-1]
		p.After = &Position{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	// Newest first from the store; oldest first for the appliance, whose
	// readers and relays are numbered in that order.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// ClaimEnrolment claims the appliance showing code for the tenant's site:
// it makes the site's edge (as CreateEdge, one active edge per site) with
// the appliance's identity key bound to it, and the appliance's next poll
// gets its configuration. A code that matches no enrolment counts against
// the tenant: after ClaimAttempts of them in ClaimLockout its claims are
// refused (*AttemptsError) whatever the code. Errors: *ValidationError
// (a malformed code, which counts as wrong, an unknown code, a bad site
// or name), ErrEnrolmentExpired, ErrEnrolmentUsed, ErrSiteHasEdge,
// *AttemptsError, and ErrBrokerUnavailable (wrapped) when the edge's
// broker account cannot be made (putBrokerAccount): nothing is stored.
func (s *Service) ClaimEnrolment(ctx context.Context, t Tenant, code, siteID, name string) (Edge, error) {
	if !t.Mode.Valid() {
		return Edge{}, fmt.Errorf("claim enrolment: mode %q is not live or test", t.Mode)
	}
	now := s.Now()
	fails, err := s.store.EnrolmentFailures(ctx, t, now.Add(-ClaimLockout))
	if err != nil {
		return Edge{}, fmt.Errorf("claim enrolment: %w", err)
	}
	if len(fails) >= ClaimAttempts {
		return Edge{}, &AttemptsError{Until: fails[len(fails)-ClaimAttempts].Add(ClaimLockout)}
	}
	if name == "" {
		name = DefaultEdgeName
	}
	var v ValidationError
	checkText(&v, "name", name, true, MaxNameLen)
	if err := s.checkSite(ctx, &v, t, "site_id", siteID); err != nil {
		return Edge{}, fmt.Errorf("claim enrolment: %w", err)
	}
	norm, ok := NormaliseEnrolmentCode(code)
	if !ok {
		v.Add("code", "is not an enrolment code: 8 letters and digits, shown on the appliance as XXXX-XXXX")
	}
	if err := v.Err(); err != nil {
		if !ok {
			if err := s.store.AddEnrolmentFailure(apart(ctx), t, now); err != nil {
				return Edge{}, fmt.Errorf("claim enrolment: %w", err)
			}
		}
		return Edge{}, err
	}
	id := ids.New(ids.Edge)
	// The broker password is minted when the appliance collects its
	// configuration (PollEnrolment); until then no password opens it.
	unknown := edgeSecretPrefix + keyBody()
	e := Edge{ID: id, Tenant: t, SiteID: siteID, Name: name, Username: id, SecretHash: HashKey(unknown),
		CreatedAt: now, State: EdgeOffline}
	if err := s.putBrokerAccount(ctx, e, unknown); err != nil {
		return Edge{}, fmt.Errorf("claim enrolment: %w", err)
	}
	e, err = s.store.ClaimEnrolment(ctx, HashKey(norm), e, now, func(e Edge) error { return respond(ctx, e.Presented(now)) })
	if errors.Is(err, ErrNotFound) {
		// A wrong code is counted apart from the request's action: a
		// retry of the request counts again, as another wrong try would.
		if err := s.store.AddEnrolmentFailure(apart(ctx), t, now); err != nil {
			return Edge{}, fmt.Errorf("claim enrolment: %w", err)
		}
		v.Add("code", "no appliance is showing this code; check it on the appliance's screen")
		return Edge{}, v.Err()
	}
	if err != nil {
		return Edge{}, fmt.Errorf("claim enrolment: %w", err)
	}
	return e, nil
}

// PurgeEnrolments deletes what enrolment no longer needs, older than
// EnrolmentRetention (Store.PurgeEnrolments): an appliance's poll or an
// installer's claim that would still find what it deletes gets what it
// would get from an expired code, or is not_found and the appliance asks
// for a new code. It returns how many rows it deleted. Any number of
// processes may run it at once.
func (s *Service) PurgeEnrolments(ctx context.Context) (int64, error) {
	n, err := s.store.PurgeEnrolments(ctx, s.Now().Add(-EnrolmentRetention))
	if err != nil {
		return 0, fmt.Errorf("purge enrolments: %w", err)
	}
	return n, nil
}

// SkewWarning reports whether the appliance's clock was off by more than
// SkewTolerance when it last said.
func (e Edge) SkewWarning() bool {
	return e.Skew != nil && (*e.Skew > SkewTolerance || *e.Skew < -SkewTolerance)
}
