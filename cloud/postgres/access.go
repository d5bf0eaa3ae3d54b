package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek"
	"github.com/svc-vms/svc/cloud/storedoc"
)

// CreateOrganisation implements cloud.Store.
func (s *Store) CreateOrganisation(ctx context.Context, o cloud.Organisation) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO organisations (id, name, plan, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)`,
		o.ID, o.Name, string(o.Plan), o.CreatedAt, o.UpdatedAt)
	if err != nil {
		return translate("create organisation", err)
	}
	return nil
}

// Organisation implements cloud.Store.
func (s *Store) Organisation(ctx context.Context, id string) (cloud.Organisation, error) {
	var o cloud.Organisation
	var plan string
	err := s.pool.QueryRow(ctx, `SELECT id, name, plan, created_at, updated_at FROM organisations WHERE id = $1`, id).
		Scan(&o.ID, &o.Name, &plan, &o.CreatedAt, &o.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.Organisation{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Organisation{}, fmt.Errorf("get organisation: %w", err)
	}
	o.Plan, o.CreatedAt, o.UpdatedAt = cloud.Plan(plan), o.CreatedAt.UTC(), o.UpdatedAt.UTC()
	return o, nil
}

func scopeStrings(sc []cloud.Scope) []string {
	out := make([]string, len(sc))
	for i, s := range sc {
		out[i] = string(s)
	}
	return out
}

// CreateKey implements cloud.Store.
func (s *Store) CreateKey(ctx context.Context, k cloud.APIKey) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO api_keys (id, org_id, mode, kind, scopes, hash, last4, created_at, revoked_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			k.ID, k.Tenant.OrgID, string(k.Tenant.Mode), string(k.Kind), scopeStrings(k.Scopes), k.Hash, k.Last4,
			k.CreatedAt, nullTime(k.RevokedAt))
		if err != nil {
			return translate("create key", err)
		}
		return nil
	})
}

// Key implements cloud.Store.
func (s *Store) Key(ctx context.Context, orgID, keyID string) (cloud.APIKey, error) {
	var k cloud.APIKey
	var mode, kind string
	var scopes []string
	var revoked pgtype.Timestamptz
	err := s.pool.QueryRow(ctx, `SELECT id, org_id, mode, kind, scopes, hash, last4, created_at, revoked_at
		FROM api_keys WHERE id = $1 AND org_id = $2`, keyID, orgID).
		Scan(&k.ID, &k.Tenant.OrgID, &mode, &kind, &scopes, &k.Hash, &k.Last4, &k.CreatedAt, &revoked)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, cloud.ErrNotFound
	}
	if err != nil {
		return k, fmt.Errorf("get key: %w", err)
	}
	k.Tenant.Mode, k.Kind = cloud.Mode(mode), cloud.KeyKind(kind)
	for _, sc := range scopes {
		k.Scopes = append(k.Scopes, cloud.Scope(sc))
	}
	k.CreatedAt, k.RevokedAt = k.CreatedAt.UTC(), timePtr(revoked)
	return k, nil
}

// KeyByHash implements cloud.Store.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (cloud.Principal, error) {
	var p cloud.Principal
	var mode, kind, plan string
	var scopes []string
	var revoked pgtype.Timestamptz
	err := s.pool.QueryRow(ctx, `SELECT k.id, k.org_id, k.mode, k.kind, k.scopes, k.hash, k.last4, k.created_at, k.revoked_at, o.plan
		FROM api_keys k JOIN organisations o ON o.id = k.org_id WHERE k.hash = $1`, hash).
		Scan(&p.Key.ID, &p.Key.Tenant.OrgID, &mode, &kind, &scopes, &p.Key.Hash, &p.Key.Last4, &p.Key.CreatedAt, &revoked, &plan)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.Principal{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Principal{}, fmt.Errorf("get key: %w", err)
	}
	p.Key.Tenant.Mode, p.Key.Kind, p.Plan = cloud.Mode(mode), cloud.KeyKind(kind), cloud.Plan(plan)
	if len(scopes) > 0 {
		p.Key.Scopes = make([]cloud.Scope, len(scopes))
		for i, sc := range scopes {
			p.Key.Scopes[i] = cloud.Scope(sc)
		}
	}
	p.Key.CreatedAt, p.Key.RevokedAt = p.Key.CreatedAt.UTC(), timePtr(revoked)
	return p, nil
}

// RevokeKey implements cloud.Store. One statement revokes the key unless it
// is revoked already and says whether it exists; the revoked_at IS NULL
// test is on the updated row itself, so of two concurrent revokes the
// second sees the first's time and keeps it.
func (s *Store) RevokeKey(ctx context.Context, orgID, keyID string, at time.Time) error {
	var found bool
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `WITH u AS (UPDATE api_keys SET revoked_at = $3
			WHERE id = $1 AND org_id = $2 AND revoked_at IS NULL RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM u) OR EXISTS (SELECT 1 FROM api_keys WHERE id = $1 AND org_id = $2)`,
			keyID, orgID, at).Scan(&found)
	})
	if err != nil {
		return fmt.Errorf("revoke key: %w", err)
	}
	if !found {
		return cloud.ErrNotFound
	}
	return nil
}

// Secret implements cloud.Store. generate is called only when the secret
// is missing; when two processes race, the first insert wins and both read
// it back.
func (s *Store) Secret(ctx context.Context, name string, generate func() []byte) ([]byte, error) {
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		sealed := storedoc.ServerSecret.Seal(s.kek, generate(), name)
		if _, err = s.pool.Exec(ctx, `INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`, name, sealed); err == nil {
			err = s.pool.QueryRow(ctx, `SELECT value FROM secrets WHERE name = $1`, name).Scan(&v)
		}
	}
	if err == nil {
		v, err = storedoc.ServerSecret.Open(s.kek, v, name)
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return v, nil
}

// replyInsert is the insert of an idempotency record with its response.
// It replaces a record older than the replay window (or one a claim of an
// earlier version left unfinished) and leaves a live one alone: then it
// affects no row, and the caller fails the write.
func replyInsert(keys *kek.Ring, rec *cloud.IdempotencyRecord) (string, []any) {
	t, resp := rec.Tenant, rec.Response
	header, fingerprint := resp.Header, rec.Fingerprint
	body := storedoc.IdempotencyBody.Seal(keys, resp.Body, t.OrgID, string(t.Mode), rec.Key)
	if header == nil {
		header = map[string]string{}
	}
	if fingerprint == nil {
		fingerprint = []byte{}
	}
	return `INSERT INTO idempotency_keys (org_id, mode, key, owner, fingerprint, method, path, created_at, done, status, header, body)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, true, $9, $10, $11)
		ON CONFLICT (org_id, mode, key) DO UPDATE SET owner = excluded.owner, fingerprint = excluded.fingerprint,
			method = excluded.method, path = excluded.path, created_at = excluded.created_at,
			done = true, status = excluded.status, header = excluded.header, body = excluded.body
		WHERE idempotency_keys.created_at < $12 OR NOT idempotency_keys.done`,
		[]any{t.OrgID, string(t.Mode), rec.Key, rec.RequestID, fingerprint, rec.Method, rec.Path, rec.CreatedAt,
			resp.Status, header, body, rec.CreatedAt.Add(-cloud.IdempotencyWindow)}
}

// IdempotencyRecord implements cloud.Store.
func (s *Store) IdempotencyRecord(ctx context.Context, t cloud.Tenant, key string, since time.Time) (cloud.IdempotencyRecord, error) {
	rec := cloud.IdempotencyRecord{Tenant: t, Key: key}
	err := s.pool.QueryRow(ctx, `SELECT owner, fingerprint, method, path, created_at, status, header, body
		FROM idempotency_keys WHERE org_id = $1 AND mode = $2 AND key = $3 AND done AND created_at >= $4`,
		t.OrgID, string(t.Mode), key, since).
		Scan(&rec.RequestID, &rec.Fingerprint, &rec.Method, &rec.Path, &rec.CreatedAt,
			&rec.Response.Status, &rec.Response.Header, &rec.Response.Body)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.IdempotencyRecord{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.IdempotencyRecord{}, fmt.Errorf("idempotency record: %w", err)
	}
	rec.CreatedAt = rec.CreatedAt.UTC()
	if rec.Response.Header == nil {
		rec.Response.Header = map[string]string{}
	}
	if rec.Response.Body, err = storedoc.IdempotencyBody.Open(s.kek, rec.Response.Body, t.OrgID, string(t.Mode), key); err != nil {
		return cloud.IdempotencyRecord{}, fmt.Errorf("idempotency record: %w", err)
	}
	return rec, nil
}

// PutIdempotencyRecord implements cloud.Store in one statement.
func (s *Store) PutIdempotencyRecord(ctx context.Context, rec cloud.IdempotencyRecord) error {
	sql, args := replyInsert(s.kek, &rec)
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("put idempotency record: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("put idempotency record: %w", cloud.ErrIdempotencyKeyUsed)
	}
	return nil
}

// PurgeIdempotencyKeys implements cloud.Store.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}

// CountRequests implements cloud.Store in one round trip; the counters are
// shared by every process on the database.
func (s *Store) CountRequests(ctx context.Context, t cloud.Tenant, windowStart time.Time, n int64) (int64, error) {
	var total int64
	err := s.pool.QueryRow(ctx, `INSERT INTO request_counts (org_id, mode, window_start, count) VALUES ($1, $2, $3, $4)
		ON CONFLICT (org_id, mode, window_start) DO UPDATE SET count = request_counts.count + EXCLUDED.count
		RETURNING count`, t.OrgID, string(t.Mode), windowStart, n).Scan(&total)
	if err != nil {
		return 0, fmt.Errorf("count requests: %w", err)
	}
	return total, nil
}

// PurgeRequestCounts implements cloud.Store.
func (s *Store) PurgeRequestCounts(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM request_counts WHERE window_start < $1`, before)
	if err != nil {
		return 0, fmt.Errorf("purge request counts: %w", err)
	}
	return tag.RowsAffected(), nil
}

// PutReplica implements cloud.Store.
func (s *Store) PutReplica(ctx context.Context, r cloud.Replica) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO replicas (id, rate_limits, seen_at) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET rate_limits = EXCLUDED.rate_limits, seen_at = EXCLUDED.seen_at`, r.ID, r.RateLimits, r.SeenAt); err != nil {
			return fmt.Errorf("put replica: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM replicas WHERE seen_at < $1`, r.SeenAt.Add(-cloud.ReplicaForget)); err != nil {
			return fmt.Errorf("put replica: %w", err)
		}
		return nil
	})
}

// Replicas implements cloud.Store.
func (s *Store) Replicas(ctx context.Context, since time.Time) ([]cloud.Replica, error) {
	return many(ctx, s.pool, func(r scanner) (cloud.Replica, error) {
		var rep cloud.Replica
		err := r.Scan(&rep.ID, &rep.RateLimits, &rep.SeenAt)
		rep.SeenAt = rep.SeenAt.UTC()
		return rep, err
	}, "list replicas", `SELECT id, rate_limits, seen_at FROM replicas WHERE seen_at >= $1 ORDER BY id`, since)
}
