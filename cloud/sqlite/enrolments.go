package sqlite

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"fmt"
	"time"

	"github.com/svc-vms/svc/cloud"
)

// EdgeByIdentity implements cloud.Store.
func (s *Store) EdgeByIdentity(ctx context.Context, pub []byte) (cloud.Edge, error) {
	return get(ctx, s.r, scanEdge, `SELECT `+edgeRead+` FROM edges WHERE identity_key = ? AND revoked_at IS NULL
		ORDER BY created_at DESC LIMIT 1`, pub)
}

// SetEdgeSecret implements cloud.Store.
func (s *Store) SetEdgeSecret(ctx context.Context, id string, hash []byte, skew time.Duration, at time.Time) error {
	res, err := s.w.ExecContext(ctx, `UPDATE edges SET secret_hash = ?, skew_ms = ? WHERE id = ? AND revoked_at IS NULL`,
		hash, skew.Milliseconds(), id)
	if err != nil {
		return fmt.Errorf("set edge secret: %w", classify(err))
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("set edge secret: edge %s: %w", id, cloud.ErrNotFound)
	}
	return nil
}

const enrolmentCols = `public_key, code_hash, created_at, expires_at, address, skew_ms, claimed_at, org_id, mode, edge_id`

func scanEnrolment(r scanner) (cloud.Enrolment, error) {
	var en cloud.Enrolment
	var pub []byte
	var created, expires, skew int64
	var claimed sql.NullInt64
	var org, mode, edge sql.NullString
	err := r.Scan(&pub, &en.CodeHash, &created, &expires, &en.Address, &skew, &claimed, &org, &mode, &edge)
	en.PublicKey = ed25519.PublicKey(pub)
	en.CreatedAt, en.ExpiresAt, en.Skew, en.ClaimedAt = fromMicros(created), fromMicros(expires), time.Duration(skew)*time.Millisecond, fromNullMicros(claimed)
	en.Tenant, en.EdgeID = cloud.Tenant{OrgID: org.String, Mode: cloud.Mode(mode.String)}, edge.String
	return en, err
}

// PutEnrolment implements cloud.Store.
func (s *Store) PutEnrolment(ctx context.Context, en cloud.Enrolment) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO enrolments (`+enrolmentCols+`) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL)
		ON CONFLICT (public_key) DO UPDATE SET code_hash = excluded.code_hash, created_at = excluded.created_at,
			expires_at = excluded.expires_at, address = excluded.address, skew_ms = excluded.skew_ms,
			claimed_at = NULL, org_id = NULL, mode = NULL, edge_id = NULL`,
		[]byte(en.PublicKey), en.CodeHash, micros(en.CreatedAt), micros(en.ExpiresAt), en.Address, en.Skew.Milliseconds())
	if isUniqueViolation(err) {
		return fmt.Errorf("put enrolment: %w: %w", cloud.ErrConflict, err)
	}
	if err != nil {
		return fmt.Errorf("put enrolment: %w", classify(err))
	}
	return nil
}

// Enrolment implements cloud.Store.
func (s *Store) Enrolment(ctx context.Context, pub []byte) (cloud.Enrolment, error) {
	return get(ctx, s.r, scanEnrolment, `SELECT `+enrolmentCols+` FROM enrolments WHERE public_key = ?`, pub)
}

// EnrolmentSkew implements cloud.Store.
func (s *Store) EnrolmentSkew(ctx context.Context, pub []byte, skew time.Duration) error {
	res, err := s.w.ExecContext(ctx, `UPDATE enrolments SET skew_ms = ? WHERE public_key = ?`, skew.Milliseconds(), pub)
	if err != nil {
		return fmt.Errorf("enrolment skew: %w", classify(err))
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return cloud.ErrNotFound
	}
	return nil
}

// ClaimEnrolment implements cloud.Store. The one writer connection makes
// two claims of one code take turns: the second sees the first's mark.
func (s *Store) ClaimEnrolment(ctx context.Context, codeHash []byte, e cloud.Edge, at time.Time, fn func(cloud.Edge) error) (cloud.Edge, error) {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		en, err := get(ctx, tx, scanEnrolment, `SELECT `+enrolmentCols+` FROM enrolments WHERE code_hash = ?`, codeHash)
		switch {
		case err != nil:
			return err
		case en.ClaimedAt != nil:
			return fmt.Errorf("claim enrolment: %w at %s", cloud.ErrEnrolmentUsed, en.ClaimedAt.Format(time.RFC3339))
		case !at.Before(en.ExpiresAt):
			return fmt.Errorf("claim enrolment: %w at %s", cloud.ErrEnrolmentExpired, en.ExpiresAt.Format(time.RFC3339))
		}
		e.IdentityKey = []byte(en.PublicKey)
		skew := en.Skew
		e.Skew = &skew
		if err := insertEdge(ctx, tx, e); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE enrolments SET claimed_at = ?, org_id = ?, mode = ?, edge_id = ? WHERE public_key = ?`,
			micros(at), e.Tenant.OrgID, string(e.Tenant.Mode), e.ID, []byte(en.PublicKey))
		if err != nil {
			return fmt.Errorf("claim enrolment: %w", err)
		}
		if e, err = get(ctx, tx, scanEdge, `SELECT `+edgeRead+` FROM edges WHERE id = ?`, e.ID); err != nil {
			return err
		}
		return fn(e)
	})
	if err != nil {
		return cloud.Edge{}, err
	}
	return e, nil
}

// AddEnrolmentFailure implements cloud.Store.
func (s *Store) AddEnrolmentFailure(ctx context.Context, t cloud.Tenant, at time.Time) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO enrolment_failures (org_id, mode, at) VALUES (?, ?, ?)`, t.OrgID, string(t.Mode), micros(at))
	if err != nil {
		return fmt.Errorf("add enrolment failure: %w", classify(err))
	}
	return nil
}

// EnrolmentFailures implements cloud.Store.
func (s *Store) EnrolmentFailures(ctx context.Context, t cloud.Tenant, since time.Time) ([]time.Time, error) {
	out, err := all(ctx, s.r, func(r scanner) (time.Time, error) {
		var at int64
		err := r.Scan(&at)
		return fromMicros(at), err
	}, `SELECT at FROM enrolment_failures WHERE org_id = ? AND mode = ? AND at > ? ORDER BY at`, t.OrgID, string(t.Mode), micros(since))
	if err != nil {
		return nil, fmt.Errorf("enrolment failures: %w", err)
	}
	return out, nil
}

// PurgeEnrolments implements cloud.Store.
func (s *Store) PurgeEnrolments(ctx context.Context, before time.Time) (int64, error) {
	b := micros(before)
	failures, err := s.w.ExecContext(ctx, `DELETE FROM enrolment_failures WHERE at < ?`, b)
	if err != nil {
		return 0, fmt.Errorf("purge enrolment failures: %w", classify(err))
	}
	enrolments, err := s.w.ExecContext(ctx, `DELETE FROM enrolments WHERE (claimed_at IS NULL AND expires_at < ?)
		OR (claimed_at < ? AND NOT EXISTS (SELECT 1 FROM edges
			WHERE edges.id = enrolments.edge_id AND edges.last_seen_at IS NULL AND edges.revoked_at IS NULL))`, b, b)
	if err != nil {
		return 0, fmt.Errorf("purge enrolments: %w", classify(err))
	}
	nf, _ := failures.RowsAffected()
	ne, _ := enrolments.RowsAffected()
	return nf + ne, nil
}
