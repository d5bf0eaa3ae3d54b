package cloud

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
)

// signingKey returns the tenant's newest pass-signing key not set to
// retire, making the first one when there is none. Two processes racing
// to make the first key both succeed; both keys verify.
func (s *Service) signingKey(ctx context.Context, t Tenant) (passtoken.Key, error) {
	keys, err := s.store.PassKeys(ctx, t)
	if err != nil {
		return passtoken.Key{}, fmt.Errorf("pass keys: %w", err)
	}
	for _, k := range keys {
		if k.RetiredAt == nil {
			return passtoken.Key{ID: k.ID, Private: ed25519.PrivateKey(k.Private)}, nil
		}
	}
	k, err := passtoken.NewKey(nil)
	if err != nil {
		return passtoken.Key{}, err
	}
	if err := s.store.CreatePassKey(apart(ctx), PassKey{ID: k.ID, Tenant: t, Private: k.Private, CreatedAt: s.Now()}); err != nil {
		return passtoken.Key{}, fmt.Errorf("create pass key: %w", err)
	}
	return k, nil
}

// PassKeySet returns the public keys that verify the tenant's passes now:
// every key not yet retired.
func (s *Service) PassKeySet(ctx context.Context, t Tenant) (passtoken.KeySet, error) {
	keys, err := s.store.PassKeys(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("pass keys: %w", err)
	}
	now := s.Now()
	set := passtoken.KeySet{}
	for _, k := range keys {
		if !k.Retired(now) {
			set[k.ID] = ed25519.PrivateKey(k.Private).Public().(ed25519.PublicKey)
		}
	}
	return set, nil
}

// PassKeyGrace is how long, at least, a rotated pass-signing key keeps
// verifying by default: time to hand out again the personal passes it
// signed (they never expire; GET /people/{id}/pass signs them anew with the
// new key, with no reissue).
const PassKeyGrace = 30 * 24 * time.Hour

// RotatePassKey makes a new pass-signing key for the tenant, which signs
// every pass from now on (tokens are signed when they are shown, so a pass
// shown again after the rotation carries the new key). The keys it
// replaces verify on, at the cloud and at every edge (the feed carries
// their retire time), until the last pass they may have signed has
// expired: the latest end of a visit whose pass still works, plus the
// longest window after it (passrule.MaxWindowMinutes), and not before grace
// from now. Then they retire, and their passes are refused as invalid.
// It returns the new key and the keys set to retire, with their time.
func (s *Service) RotatePassKey(ctx context.Context, t Tenant, grace time.Duration) (PassKey, []PassKey, error) {
	if !t.Mode.Valid() {
		return PassKey{}, nil, fmt.Errorf("rotate pass key: mode %q is not live or test", t.Mode)
	}
	if grace < 0 {
		return PassKey{}, nil, fmt.Errorf("rotate pass key: grace %v is negative", grace)
	}
	now := s.Now()
	retire := now.Add(grace)
	until, err := s.store.PassesUntil(ctx, t)
	if err != nil {
		return PassKey{}, nil, fmt.Errorf("rotate pass key: %w", err)
	}
	if until != nil {
		if end := until.Add(passrule.MaxWindowMinutes * time.Minute); end.After(retire) {
			retire = end
		}
	}
	k, err := passtoken.NewKey(nil)
	if err != nil {
		return PassKey{}, nil, err
	}
	pk := PassKey{ID: k.ID, Tenant: t, Private: k.Private, CreatedAt: now}
	retiring, err := s.store.RotatePassKey(ctx, pk, retire.UTC().Truncate(time.Second))
	if err != nil {
		return PassKey{}, nil, fmt.Errorf("rotate pass key: %w", err)
	}
	return pk, retiring, nil
}

// PassToken returns the signed token a visit's QR pass holds. Only a
// visit whose pass works (expected, checked in or out, not revoked) has one.
func (s *Service) PassToken(ctx context.Context, a Actor, id string) (string, error) {
	v, err := s.Visit(ctx, a, id)
	if err != nil {
		return "", err
	}
	return s.passToken(ctx, v)
}

func (s *Service) passToken(ctx context.Context, v Visit) (string, error) {
	switch {
	case v.Pass.Revoked:
		return "", &StateError{Object: "visit", State: string(v.Status) + " with a revoked pass", Action: "show the pass of"}
	case v.Status != VisitExpected && v.Status != VisitCheckedIn && v.Status != VisitCheckedOut:
		return "", &StateError{Object: "visit", State: string(v.Status), Action: "show the pass of"}
	}
	k, err := s.signingKey(ctx, v.Tenant)
	if err != nil {
		return "", err
	}
	r := v.Pass.Rules
	c := passtoken.Claims{VisitID: v.Pass.ForVisitID, SiteID: v.SiteID, GateIDs: r.GateIDs, SingleUse: r.SingleUse, IssuedAt: s.Now()}
	if v.ExpectedAt != nil {
		c.NotBefore = v.ExpectedAt.Add(-time.Duration(r.Window.Before) * time.Minute)
	}
	if v.ExpectedUntil != nil {
		c.NotAfter = v.ExpectedUntil.Add(time.Duration(r.Window.After) * time.Minute)
	} else if v.CheckedInAt != nil {
		// A walk-in has no expected times: the pass lasts the day of
		// arrival at the site.
		site, err := s.store.Site(ctx, v.Tenant, v.SiteID)
		if err != nil {
			return "", err
		}
		loc, err := loadLocation(site.Timezone)
		if err != nil {
			return "", fmt.Errorf("site %s: %w", site.ID, err)
		}
		c.NotAfter = endOfDay(*v.CheckedInAt, loc).Add(time.Duration(r.Window.After) * time.Minute)
	}
	if r.Daily != nil {
		c.Daily = &passtoken.Daily{From: int(r.Daily.From), Until: int(r.Daily.Until)}
	}
	tok, err := passtoken.Sign(k, c)
	if err != nil {
		return "", fmt.Errorf("sign pass of %s: %w", v.ID, err)
	}
	return tok, nil
}

// LoadSecrets reads (making them on first use) the server secrets the
// service signs with: the key of visitor-facing pass links. A server calls
// it once before serving.
func (s *Service) LoadSecrets(ctx context.Context) error {
	key, err := s.store.Secret(ctx, "pass-link-key", func() []byte {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return b
	})
	if err != nil {
		return fmt.Errorf("pass link key: %w", err)
	}
	s.linkKey = key
	return nil
}

// passLinkMAC is the length of a pass link's MAC, in bytes.
const passLinkMAC = 16

// PassLink returns the path of the visitor-facing image of a visit's pass:
// an unguessable link the visitor opens without a key, signed with the
// server's pass-link key over the organisation, mode and visit. The image
// shows the pass as it is when opened, so a changed pass needs no new link
// and a revoked one stops showing.
func (s *Service) PassLink(t Tenant, visitID string) string {
	payload := t.OrgID + ":" + string(t.Mode) + ":" + visitID
	m := hmac.New(sha256.New, s.linkKey)
	m.Write([]byte(payload))
	enc := base64.RawURLEncoding
	return "/v1/passes/" + enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(m.Sum(nil)[:passLinkMAC])
}

// OpenPassLink checks a pass link without reading the store and returns
// the tenant and visit it names, whose pass LinkedPass gives; ErrNotFound
// when it is not, exactly, a link PassLink made. A link has one text form: its base64url parts are decoded
// strictly, so no two texts name the same pass.
func (s *Service) OpenPassLink(link string) (Tenant, string, error) {
	body, sig, ok := strings.Cut(link, ".")
	if !ok || len(link) > 256 || len(s.linkKey) == 0 {
		return Tenant{}, "", ErrNotFound
	}
	payload, ok1 := decodeLinkPart(body)
	mac, ok2 := decodeLinkPart(sig)
	if !ok1 || !ok2 {
		return Tenant{}, "", ErrNotFound
	}
	m := hmac.New(sha256.New, s.linkKey)
	m.Write(payload)
	if !hmac.Equal(mac, m.Sum(nil)[:passLinkMAC]) {
		return Tenant{}, "", ErrNotFound
	}
	parts := strings.Split(string(payload), ":")
	if len(parts) != 3 {
		return Tenant{}, "", ErrNotFound
	}
	return Tenant{OrgID: parts[0], Mode: Mode(parts[1])}, parts[2], nil
}

// LinkedPass returns the token of the pass of a visit OpenPassLink named;
// ErrNotFound when the visit is gone, *StateError when its pass no longer
// works.
func (s *Service) LinkedPass(ctx context.Context, t Tenant, visitID string) (string, error) {
	v, err := s.store.Visit(ctx, t, visitID)
	if err != nil {
		return "", err
	}
	return s.passToken(ctx, v)
}

// decodeLinkPart reads base64url without padding, refusing every text but
// the one the encoder writes (line breaks, non-zero unused bits).
func decodeLinkPart(s string) ([]byte, bool) {
	enc := base64.RawURLEncoding.Strict()
	b, err := enc.DecodeString(s)
	if err != nil || enc.EncodeToString(b) != s {
		return nil, false
	}
	return b, true
}
