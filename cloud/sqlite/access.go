package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/kek"
	"github.com/svc-vms/svc/cloud/storedoc"
)

// CreateOrganisation implements cloud.Store.
func (s *Store) CreateOrganisation(ctx context.Context, o cloud.Organisation) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO organisations (id, name, plan, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
		o.ID, o.Name, string(o.Plan), micros(o.CreatedAt), micros(o.UpdatedAt))
	if err != nil {
		return fmt.Errorf("insert organisation: %w", err)
	}
	return nil
}

// Organisation implements cloud.Store.
func (s *Store) Organisation(ctx context.Context, id string) (cloud.Organisation, error) {
	var o cloud.Organisation
	var plan string
	var created, updated int64
	err := s.r.QueryRowContext(ctx, `SELECT id, name, plan, created_at, updated_at FROM organisations WHERE id = ?`, id).
		Scan(&o.ID, &o.Name, &plan, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return o, cloud.ErrNotFound
	}
	if err != nil {
		return o, fmt.Errorf("get organisation: %w", classify(err))
	}
	o.Plan, o.CreatedAt, o.UpdatedAt = cloud.Plan(plan), fromMicros(created), fromMicros(updated)
	return o, nil
}

func joinScopes(sc []cloud.Scope) string {
	parts := make([]string, len(sc))
	for i, s := range sc {
		parts[i] = string(s)
	}
	return strings.Join(parts, " ")
}

func splitScopes(s string) []cloud.Scope {
	if s == "" {
		return nil
	}
	parts := strings.Fields(s)
	out := make([]cloud.Scope, len(parts))
	for i, p := range parts {
		out[i] = cloud.Scope(p)
	}
	return out
}

// CreateKey implements cloud.Store.
func (s *Store) CreateKey(ctx context.Context, k cloud.APIKey) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, org_id, mode, kind, scopes, hash, last4, created_at, revoked_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			k.ID, k.Tenant.OrgID, string(k.Tenant.Mode), string(k.Kind), joinScopes(k.Scopes), k.Hash, k.Last4,
			micros(k.CreatedAt), nullMicros(k.RevokedAt))
		if err != nil {
			return fmt.Errorf("insert key: %w", err)
		}
		return nil
	})
}

// Key implements cloud.Store.
func (s *Store) Key(ctx context.Context, orgID, keyID string) (cloud.APIKey, error) {
	var k cloud.APIKey
	var mode, kind, scopes string
	var created int64
	var revoked sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT id, org_id, mode, kind, scopes, hash, last4, created_at, revoked_at
		FROM api_keys WHERE id = ? AND org_id = ?`, keyID, orgID).
		Scan(&k.ID, &k.Tenant.OrgID, &mode, &kind, &scopes, &k.Hash, &k.Last4, &created, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return k, cloud.ErrNotFound
	}
	if err != nil {
		return k, fmt.Errorf("get key: %w", classify(err))
	}
	k.Tenant.Mode, k.Kind, k.Scopes = cloud.Mode(mode), cloud.KeyKind(kind), splitScopes(scopes)
	k.CreatedAt, k.RevokedAt = fromMicros(created), fromNullMicros(revoked)
	return k, nil
}

// KeyByHash implements cloud.Store.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (cloud.Principal, error) {
	var p cloud.Principal
	var mode, kind, scopes, plan string
	var created int64
	var revoked sql.NullInt64
	err := s.r.point(ctx, `SELECT k.id, k.org_id, k.mode, k.kind, k.scopes, k.hash, k.last4, k.created_at, k.revoked_at, o.plan
		FROM api_keys k JOIN organisations o ON o.id = k.org_id WHERE k.hash = ?`, hash).
		Scan(&p.Key.ID, &p.Key.Tenant.OrgID, &mode, &kind, &scopes, &p.Key.Hash, &p.Key.Last4, &created, &revoked, &plan)
	if errors.Is(err, sql.ErrNoRows) {
		return p, cloud.ErrNotFound
	}
	if err != nil {
		return p, fmt.Errorf("get key: %w", classify(err))
	}
	p.Key.Tenant.Mode, p.Key.Kind, p.Key.Scopes = cloud.Mode(mode), cloud.KeyKind(kind), splitScopes(scopes)
	p.Key.CreatedAt, p.Key.RevokedAt, p.Plan = fromMicros(created), fromNullMicros(revoked), cloud.Plan(plan)
	return p, nil
}

// RevokeKey implements cloud.Store.
func (s *Store) RevokeKey(ctx context.Context, orgID, keyID string, at time.Time) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM api_keys WHERE id = ? AND org_id = ?`, keyID, orgID).Scan(&n); err != nil {
			return fmt.Errorf("revoke key: %w", err)
		}
		if n == 0 {
			return cloud.ErrNotFound
		}
		_, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ? AND org_id = ? AND revoked_at IS NULL`, micros(at), keyID, orgID)
		return err
	})
}

// Secret implements cloud.Store.
func (s *Store) Secret(ctx context.Context, name string, generate func() []byte) ([]byte, error) {
	var v []byte
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&v); !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		v = storedoc.ServerSecret.Seal(s.kek, generate(), name)
		_, err := tx.ExecContext(ctx, `INSERT INTO secrets (name, value) VALUES (?, ?)`, name, v)
		return err
	})
	if err == nil {
		v, err = storedoc.ServerSecret.Open(s.kek, v, name)
	}
	if err != nil {
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return v, nil
}

// sealedReply is an idempotency record's response header and body as
// insertReply stores them. An Atomic call seals the reply its request
// has rendered before it takes the writer's turn (boundTx.begin), so that
// the encryption is not part of the turn.
type sealedReply struct {
	rec    *cloud.IdempotencyRecord
	header string
	body   []byte
}

func sealReply(keys *kek.Ring, rec *cloud.IdempotencyRecord) (sealedReply, error) {
	header, err := encodeHeader(rec.Response.Header)
	if err != nil {
		return sealedReply{}, err
	}
	body := storedoc.IdempotencyBody.Seal(keys, rec.Response.Body, rec.Tenant.OrgID, string(rec.Tenant.Mode), rec.Key)
	return sealedReply{rec: rec, header: header, body: body}, nil
}

// fits reports whether s was sealed from the response rec holds, for the
// same tenant and key (which the body's seal is bound to).
func (s *sealedReply) fits(rec *cloud.IdempotencyRecord) bool {
	return s.rec.Tenant == rec.Tenant && s.rec.Key == rec.Key && s.rec.Response.Status == rec.Response.Status &&
		maps.Equal(s.rec.Response.Header, rec.Response.Header) && bytes.Equal(s.rec.Response.Body, rec.Response.Body)
}

// insertReply inserts rec, an idempotency record with its response, in
// tx. It replaces a record older than the replay window (or one a claim
// of an earlier version left unfinished) and leaves a live one alone: then
// the write fails with ErrIdempotencyKeyUsed.
// sealed, when it fits rec, is rec's header and body sealed already.
func insertReply(ctx context.Context, tx *sql.Tx, keys *kek.Ring, rec *cloud.IdempotencyRecord, sealed *sealedReply) error {
	if sealed == nil || !sealed.fits(rec) {
		sr, err := sealReply(keys, rec)
		if err != nil {
			return err
		}
		sealed = &sr
	}
	header, body := sealed.header, sealed.body
	fingerprint := rec.Fingerprint
	if fingerprint == nil {
		fingerprint = []byte{}
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO idempotency_keys (org_id, mode, key, owner, fingerprint, method, path, created_at, done, status, header, body)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)
		ON CONFLICT (org_id, mode, key) DO UPDATE SET owner = excluded.owner, fingerprint = excluded.fingerprint,
			method = excluded.method, path = excluded.path, created_at = excluded.created_at,
			done = 1, status = excluded.status, header = excluded.header, body = excluded.body
		WHERE idempotency_keys.created_at < ? OR idempotency_keys.done = 0`,
		rec.Tenant.OrgID, string(rec.Tenant.Mode), rec.Key, rec.RequestID, fingerprint, rec.Method, rec.Path,
		micros(rec.CreatedAt), rec.Response.Status, header, body, micros(rec.CreatedAt.Add(-cloud.IdempotencyWindow)))
	if err != nil {
		return fmt.Errorf("store response of %s %s: %w", rec.Method, rec.Path, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("store response of %s %s: %w", rec.Method, rec.Path, err)
	} else if n == 0 {
		return fmt.Errorf("store response of %s %s: %w", rec.Method, rec.Path, cloud.ErrIdempotencyKeyUsed)
	}
	return nil
}

// IdempotencyRecord implements cloud.Store.
func (s *Store) IdempotencyRecord(ctx context.Context, t cloud.Tenant, key string, since time.Time) (cloud.IdempotencyRecord, error) {
	rec := cloud.IdempotencyRecord{Tenant: t, Key: key}
	var created int64
	var header string
	err := s.r.point(ctx, `SELECT owner, fingerprint, method, path, created_at, status, header, body
		FROM idempotency_keys WHERE org_id = ? AND mode = ? AND key = ? AND done = 1 AND created_at >= ?`,
		t.OrgID, string(t.Mode), key, micros(since)).
		Scan(&rec.RequestID, &rec.Fingerprint, &rec.Method, &rec.Path, &created, &rec.Response.Status, &header, &rec.Response.Body)
	if errors.Is(err, sql.ErrNoRows) {
		return cloud.IdempotencyRecord{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.IdempotencyRecord{}, fmt.Errorf("idempotency record: %w", classify(err))
	}
	rec.CreatedAt = fromMicros(created)
	if rec.Response.Header, err = decodeHeader(header); err != nil {
		return cloud.IdempotencyRecord{}, fmt.Errorf("idempotency record: %w", err)
	}
	if rec.Response.Body, err = storedoc.IdempotencyBody.Open(s.kek, rec.Response.Body, t.OrgID, string(t.Mode), key); err != nil {
		return cloud.IdempotencyRecord{}, fmt.Errorf("idempotency record: %w", err)
	}
	return rec, nil
}

// PutIdempotencyRecord implements cloud.Store.
func (s *Store) PutIdempotencyRecord(ctx context.Context, rec cloud.IdempotencyRecord) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("put idempotency record: %w", classify(err))
	}
	if err := insertReply(ctx, tx, s.kek, &rec, nil); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("put idempotency record: %w", classify(err))
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("put idempotency record: %w", classify(err))
	}
	return nil
}

// PurgeIdempotencyKeys implements cloud.Store.
func (s *Store) PurgeIdempotencyKeys(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE created_at < ?`, micros(before))
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", err)
	}
	return res.RowsAffected()
}

// CountRequests implements cloud.Store. The counters live in this process:
// a SQLite file is served by one process.
func (s *Store) CountRequests(_ context.Context, t cloud.Tenant, windowStart time.Time, n int64) (int64, error) {
	s.countsMu.Lock()
	defer s.countsMu.Unlock()
	k := countKey{t: t, window: windowStart.UnixMicro()}
	s.counts[k] += n
	return s.counts[k], nil
}

// PurgeRequestCounts implements cloud.Store.
func (s *Store) PurgeRequestCounts(_ context.Context, before time.Time) (int64, error) {
	s.countsMu.Lock()
	defer s.countsMu.Unlock()
	var n int64
	for k := range s.counts {
		if k.window < before.UnixMicro() {
			delete(s.counts, k)
			n++
		}
	}
	return n, nil
}

// PutReplica implements cloud.Store.
func (s *Store) PutReplica(ctx context.Context, r cloud.Replica) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO replicas (id, rate_limits, seen_at) VALUES (?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET rate_limits = excluded.rate_limits, seen_at = excluded.seen_at`, r.ID, r.RateLimits, micros(r.SeenAt)); err != nil {
			return fmt.Errorf("put replica: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM replicas WHERE seen_at < ?`, micros(r.SeenAt.Add(-cloud.ReplicaForget))); err != nil {
			return fmt.Errorf("put replica: %w", err)
		}
		return nil
	})
}

// Replicas implements cloud.Store.
func (s *Store) Replicas(ctx context.Context, since time.Time) ([]cloud.Replica, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, rate_limits, seen_at FROM replicas WHERE seen_at >= ? ORDER BY id`, micros(since))
	if err != nil {
		return nil, fmt.Errorf("list replicas: %w", classify(err))
	}
	defer rows.Close()
	var out []cloud.Replica
	for rows.Next() {
		var r cloud.Replica
		var seen int64
		if err := rows.Scan(&r.ID, &r.RateLimits, &seen); err != nil {
			return nil, fmt.Errorf("list replicas: %w", err)
		}
		r.SeenAt = fromMicros(seen)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list replicas: %w", classify(err))
	}
	return out, nil
}
