package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/svc-vms/svc/shared/ids"
)

// ErrUnauthorized is returned by Authenticate for a missing, malformed,
// unknown or revoked key, and by AuthenticateEdge for an unknown edge or a
// wrong password.
var ErrUnauthorized = errors.New("unauthorized")

// CreateKey makes a key for the tenant and returns it with the key string,
// which is shown this once and never stored. Secret keys carry scopes (all
// of them when scopes is nil); publishable keys take none.
func (s *Service) CreateKey(ctx context.Context, t Tenant, kind KeyKind, scopes []Scope) (APIKey, string, error) {
	if !t.Mode.Valid() {
		return APIKey{}, "", fmt.Errorf("create key: mode %q is not live or test", t.Mode)
	}
	switch kind {
	case KindSecret:
		if scopes == nil {
			scopes = Scopes
		}
		for _, sc := range scopes {
			if !sc.Valid() {
				return APIKey{}, "", fmt.Errorf("create key: unknown scope %q", sc)
			}
		}
	case KindPublishable:
		if len(scopes) > 0 {
			return APIKey{}, "", errors.New("create key: publishable keys take no scopes: their rights are fixed")
		}
		scopes = nil
	default:
		return APIKey{}, "", fmt.Errorf("create key: kind %q is not secret or publishable", kind)
	}
	if _, err := s.store.Organisation(ctx, t.OrgID); err != nil {
		return APIKey{}, "", fmt.Errorf("create key: organisation %s: %w", t.OrgID, err)
	}
	secret := NewKeySecret(kind, t.Mode)
	k := APIKey{ID: ids.New(ids.Key), Tenant: t, Kind: kind, Scopes: scopes, Hash: HashKey(secret),
		Last4: secret[len(secret)-4:], CreatedAt: s.Now()}
	ctx, l := withEvents(ctx)
	l.audit = append(l.audit, s.keyAudit(ctx, AuditKeyCreated, k))
	if err := s.committed(l, s.store.CreateKey(ctx, k)); err != nil {
		return APIKey{}, "", fmt.Errorf("create key: %w", err)
	}
	return k, secret, nil
}

// keyAudit is the audit entry of a key's creation or revocation: keys are
// made and revoked by the operator's command line, so the actor is the
// system.
func (s *Service) keyAudit(ctx context.Context, action string, k APIKey) AuditEvent {
	detail, _ := json.Marshal(map[string]any{"kind": k.Kind, "last4": k.Last4, "scopes": k.Scopes})
	return AuditEvent{ID: ids.New(ids.AuditEvent), Tenant: k.Tenant, Action: action, ActorKind: ActorSystem,
		ObjectType: "key", ObjectID: k.ID, RequestID: RequestID(ctx), Detail: detail, CreatedAt: s.Now()}
}

// RevokeKey revokes a key of the organisation; ErrNotFound when it has none
// with this ID. Revoking a revoked key changes nothing.
func (s *Service) RevokeKey(ctx context.Context, orgID, keyID string) error {
	k, err := s.store.Key(ctx, orgID, keyID)
	if err != nil {
		return err
	}
	if k.RevokedAt != nil {
		return nil
	}
	ctx, l := withEvents(ctx)
	l.audit = append(l.audit, s.keyAudit(ctx, AuditKeyRevoked, k))
	return s.committed(l, s.store.RevokeKey(ctx, orgID, keyID, s.Now()))
}

// Authenticate returns who a presented key acts as, or ErrUnauthorized.
func (s *Service) Authenticate(ctx context.Context, token string) (Principal, error) {
	kind, mode, hash, err := ParseKey(token)
	if err != nil {
		return Principal{}, ErrUnauthorized
	}
	p, err := s.store.KeyByHash(ctx, hash)
	if errors.Is(err, ErrNotFound) {
		return Principal{}, ErrUnauthorized
	}
	if err != nil {
		return Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	if p.Key.RevokedAt != nil || p.Key.Kind != kind || p.Key.Tenant.Mode != mode {
		return Principal{}, ErrUnauthorized
	}
	return p, nil
}

// CreateOrganisation creates an organisation on a plan.
func (s *Service) CreateOrganisation(ctx context.Context, name string, plan Plan) (Organisation, error) {
	if !plan.Valid() {
		return Organisation{}, fmt.Errorf("create organisation: unknown plan %q", plan)
	}
	now := s.Now()
	o := Organisation{ID: ids.New(ids.Organisation), Name: name, Plan: plan, CreatedAt: now, UpdatedAt: now}
	if err := s.store.CreateOrganisation(ctx, o); err != nil {
		return Organisation{}, fmt.Errorf("create organisation: %w", err)
	}
	for _, m := range []Mode{ModeLive, ModeTest} {
		if err := s.putBuiltinTypes(ctx, Tenant{OrgID: o.ID, Mode: m}); err != nil {
			return Organisation{}, fmt.Errorf("create organisation: %w", err)
		}
	}
	return o, nil
}
