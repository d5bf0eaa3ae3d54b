package cloud

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/svc-vms/svc/shared/passtoken"
)

// signingKey returns the tenant's newest pass-signing key that is not
// retired, making the first one when there is none. Two processes racing
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
	if err := s.store.CreatePassKey(ctx, PassKey{ID: k.ID, Tenant: t, Private: k.Private, CreatedAt: s.Now()}); err != nil {
		return passtoken.Key{}, fmt.Errorf("create pass key: %w", err)
	}
	return k, nil
}

// PassKeySet returns the public keys that verify the tenant's passes.
func (s *Service) PassKeySet(ctx context.Context, t Tenant) (passtoken.KeySet, error) {
	keys, err := s.store.PassKeys(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("pass keys: %w", err)
	}
	set := passtoken.KeySet{}
	for _, k := range keys {
		if k.RetiredAt == nil {
			set[k.ID] = ed25519.PrivateKey(k.Private).Public().(ed25519.PublicKey)
		}
	}
	return set, nil
}

// PassToken returns the signed token a visit's QR pass holds. Only a
// visit whose pass works (expected, checked in or out, not revoked) has one.
func (s *Service) PassToken(ctx context.Context, a Actor, id string) (string, error) {
	v, err := s.Visit(ctx, a, id)
	if err != nil {
		return "", err
	}
	switch {
	case v.Pass.Revoked:
		return "", &StateError{Object: "visit", State: string(v.Status) + " with a revoked pass", Action: "show the pass of"}
	case v.Status != VisitExpected && v.Status != VisitCheckedIn && v.Status != VisitCheckedOut:
		return "", &StateError{Object: "visit", State: string(v.Status), Action: "show the pass of"}
	}
	k, err := s.signingKey(ctx, a.Tenant)
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
