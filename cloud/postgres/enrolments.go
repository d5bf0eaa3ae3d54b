package postgres

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/svc-vms/svc/cloud"
)

// EdgeByIdentity implements cloud.Store.
func (s *Store) EdgeByIdentity(ctx context.Context, pub []byte) (cloud.Edge, error) {
	e, err := scanEdge(s.pool.QueryRow(ctx, `SELECT `+edgeRead+` FROM edges WHERE identity_key = $1 AND revoked_at IS NULL
		ORDER BY created_at DESC LIMIT 1`, pub))
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.Edge{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Edge{}, translate("edge by identity", err)
	}
	return e, nil
}

// SetEdgeSecret implements cloud.Store.
func (s *Store) SetEdgeSecret(ctx context.Context, id string, hash []byte, skew time.Duration, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE edges SET secret_hash = $2, skew_ms = $3 WHERE id = $1 AND revoked_at IS NULL`,
		id, hash, skew.Milliseconds())
	if err != nil {
		return translate("set edge secret", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("set edge secret: edge %s: %w", id, cloud.ErrNotFound)
	}
	return nil
}

const enrolmentCols = `public_key, code_hash, created_at, expires_at, address, skew_ms, claimed_at, org_id, mode, edge_id`

func scanEnrolment(r scanner) (cloud.Enrolment, error) {
	var en cloud.Enrolment
	var pub []byte
	var skew int64
	var claimed pgtype.Timestamptz
	var org, mode, edge pgtype.Text
	err := r.Scan(&pub, &en.CodeHash, &en.CreatedAt, &en.ExpiresAt, &en.Address, &skew, &claimed, &org, &mode, &edge)
	if errors.Is(err, pgx.ErrNoRows) {
		return cloud.Enrolment{}, cloud.ErrNotFound
	}
	if err != nil {
		return cloud.Enrolment{}, translate("read enrolment", err)
	}
	en.PublicKey = ed25519.PublicKey(pub)
	en.CreatedAt, en.ExpiresAt, en.Skew, en.ClaimedAt = en.CreatedAt.UTC(), en.ExpiresAt.UTC(), time.Duration(skew)*time.Millisecond, timePtr(claimed)
	en.Tenant, en.EdgeID = cloud.Tenant{OrgID: org.String, Mode: cloud.Mode(mode.String)}, edge.String
	return en, nil
}

// PutEnrolment implements cloud.Store.
func (s *Store) PutEnrolment(ctx context.Context, en cloud.Enrolment) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO enrolments (`+enrolmentCols+`) VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL, NULL, NULL)
		ON CONFLICT (public_key) DO UPDATE SET code_hash = excluded.code_hash, created_at = excluded.created_at,
			expires_at = excluded.expires_at, address = excluded.address, skew_ms = excluded.skew_ms,
			claimed_at = NULL, org_id = NULL, mode = NULL, edge_id = NULL`,
		[]byte(en.PublicKey), en.CodeHash, en.CreatedAt, en.ExpiresAt, en.Address, en.Skew.Milliseconds())
	if err != nil {
		return translate("put enrolment", err)
	}
	return nil
}

// Enrolment implements cloud.Store.
func (s *Store) Enrolment(ctx context.Context, pub []byte) (cloud.Enrolment, error) {
	return scanEnrolment(s.pool.QueryRow(ctx, `SELECT `+enrolmentCols+` FROM enrolments WHERE public_key = $1`, pub))
}

// EnrolmentSkew implements cloud.Store.
func (s *Store) EnrolmentSkew(ctx context.Context, pub []byte, skew time.Duration) error {
	tag, err := s.pool.Exec(ctx, `UPDATE enrolments SET skew_ms = $2 WHERE public_key = $1`, pub, skew.Milliseconds())
	if err != nil {
		return translate("enrolment skew", err)
	}
	if tag.RowsAffected() == 0 {
		return cloud.ErrNotFound
	}
	return nil
}

// ClaimEnrolment implements cloud.Store. The enrolment's row is locked, so
// two claims of one code take turns and the second sees the first's mark.
func (s *Store) ClaimEnrolment(ctx context.Context, codeHash []byte, e cloud.Edge, at time.Time, fn func(cloud.Edge) error) (cloud.Edge, error) {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		en, err := scanEnrolment(tx.QueryRow(ctx, `SELECT `+enrolmentCols+` FROM enrolments WHERE code_hash = $1 FOR UPDATE`, codeHash))
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
		if _, err := tx.Exec(ctx, `UPDATE enrolments SET claimed_at = $2, org_id = $3, mode = $4, edge_id = $5 WHERE public_key = $1`,
			[]byte(en.PublicKey), at, e.Tenant.OrgID, string(e.Tenant.Mode), e.ID); err != nil {
			return translate("claim enrolment", err)
		}
		if e, err = scanEdge(tx.QueryRow(ctx, `SELECT `+edgeRead+` FROM edges WHERE id = $1`, e.ID)); err != nil {
			return translate("claim enrolment", err)
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
	if _, err := s.pool.Exec(ctx, `INSERT INTO enrolment_failures (org_id, mode, at) VALUES ($1, $2, $3)`, t.OrgID, string(t.Mode), at); err != nil {
		return translate("add enrolment failure", err)
	}
	return nil
}

// EnrolmentFailures implements cloud.Store.
func (s *Store) EnrolmentFailures(ctx context.Context, t cloud.Tenant, since time.Time) ([]time.Time, error) {
	rows, _ := s.pool.Query(ctx, `SELECT at FROM enrolment_failures WHERE org_id = $1 AND mode = $2 AND at > $3 ORDER BY at`,
		t.OrgID, string(t.Mode), since)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (time.Time, error) {
		var at time.Time
		err := row.Scan(&at)
		return at.UTC(), err
	})
	if err != nil {
		return nil, translate("enrolment failures", err)
	}
	return out, nil
}

// PurgeEnrolments implements cloud.Store. A DELETE rechecks its condition
// on a row another transaction changed meanwhile: an enrolment asked for
// again (a new code, a later expiry) or claimed is not deleted.
func (s *Store) PurgeEnrolments(ctx context.Context, before time.Time) (int64, error) {
	failures, err := s.pool.Exec(ctx, `DELETE FROM enrolment_failures WHERE at < $1`, before)
	if err != nil {
		return 0, translate("purge enrolment failures", err)
	}
	enrolments, err := s.pool.Exec(ctx, `DELETE FROM enrolments WHERE (claimed_at IS NULL AND expires_at < $1)
		OR (claimed_at < $1 AND NOT EXISTS (SELECT 1 FROM edges
			WHERE edges.id = enrolments.edge_id AND edges.last_seen_at IS NULL AND edges.revoked_at IS NULL))`, before)
	if err != nil {
		return 0, translate("purge enrolments", err)
	}
	return failures.RowsAffected() + enrolments.RowsAffected(), nil
}
