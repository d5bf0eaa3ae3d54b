package postgres

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/svc-vms/svc/cloud"
)

const releaseCols = `version, platform, kind, size, sha256, envelope, created_at, added_at`

func scanRelease(r scanner) (cloud.Release, error) {
	var rel cloud.Release
	err := r.Scan(&rel.Version, &rel.Platform, &rel.Kind, &rel.Size, &rel.SHA256, &rel.Envelope, &rel.CreatedAt, &rel.AddedAt)
	rel.CreatedAt, rel.AddedAt = rel.CreatedAt.UTC(), rel.AddedAt.UTC()
	return rel, err
}

// one runs a single-row query, turning no rows into cloud.ErrNotFound.
func one[T any](ctx context.Context, db querier, scan func(scanner) (T, error), op, q string, args ...any) (T, error) {
	v, err := scan(db.QueryRow(ctx, q, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return v, cloud.ErrNotFound
	}
	if err != nil {
		return v, fmt.Errorf("%s: %w", op, classify(err))
	}
	return v, nil
}

// many runs a query and scans every row.
func many[T any](ctx context.Context, db querier, scan func(scanner) (T, error), op, q string, args ...any) ([]T, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, classify(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, classify(err))
	}
	return out, nil
}

// AddRelease implements cloud.Store.
func (s *Store) AddRelease(ctx context.Context, r cloud.Release, bundle io.Reader) error {
	return classify(s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO releases (`+releaseCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			r.Version, r.Platform, r.Kind, r.Size, r.SHA256, r.Envelope, r.CreatedAt, r.AddedAt); err != nil {
			return translate("add release", err)
		}
		buf := make([]byte, cloud.ReleaseChunk)
		for i := 0; ; i++ {
			n, err := io.ReadFull(bundle, buf)
			if n > 0 {
				if _, err := tx.Exec(ctx, `INSERT INTO release_chunks (version, platform, idx, data) VALUES ($1, $2, $3, $4)`,
					r.Version, r.Platform, i, buf[:n]); err != nil {
					return fmt.Errorf("add release: piece %d: %w", i, err)
				}
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("add release: read bundle: %w", err)
			}
		}
	}))
}

// Release implements cloud.Store.
func (s *Store) Release(ctx context.Context, version, platform string) (cloud.Release, error) {
	return one(ctx, s.pool, scanRelease, "get release", `SELECT `+releaseCols+` FROM releases WHERE version = $1 AND platform = $2`, version, platform)
}

// ListReleases implements cloud.Store.
func (s *Store) ListReleases(ctx context.Context) ([]cloud.Release, error) {
	return many(ctx, s.pool, scanRelease, "list releases", `SELECT `+releaseCols+` FROM releases ORDER BY added_at DESC, version DESC, platform`)
}

// ReleaseChunk implements cloud.Store.
func (s *Store) ReleaseChunk(ctx context.Context, version, platform string, index int) ([]byte, error) {
	return one(ctx, s.pool, func(r scanner) ([]byte, error) {
		var b []byte
		return b, r.Scan(&b)
	}, "release piece", `SELECT data FROM release_chunks WHERE version = $1 AND platform = $2 AND idx = $3`, version, platform, index)
}

const rolloutCols = `id, org_id, mode, version, site_ids, edge_ids, window_start, window_minutes, deadline, first_percent, state, reason, created_at, cancelled_at`

func scanRollout(r scanner) (cloud.Rollout, error) {
	var ro cloud.Rollout
	var mode string
	var sites, edges []byte
	var deadline, cancelled pgtype.Timestamptz
	err := r.Scan(&ro.ID, &ro.Tenant.OrgID, &mode, &ro.Version, &sites, &edges, &ro.WindowStart, &ro.WindowMinutes, &deadline,
		&ro.FirstPercent, &ro.State, &ro.Reason, &ro.CreatedAt, &cancelled)
	if err != nil {
		return ro, err
	}
	ro.Tenant.Mode = cloud.Mode(mode)
	ro.CreatedAt, ro.Deadline, ro.CancelledAt = ro.CreatedAt.UTC(), timePtr(deadline), timePtr(cancelled)
	if err := json.Unmarshal(sites, &ro.SiteIDs); err != nil {
		return ro, err
	}
	return ro, json.Unmarshal(edges, &ro.EdgeIDs)
}

// CreateRollout implements cloud.Store.
func (s *Store) CreateRollout(ctx context.Context, r cloud.Rollout) error {
	sites, _ := json.Marshal(r.SiteIDs)
	edges, _ := json.Marshal(r.EdgeIDs)
	return classify(s.inTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO rollouts (`+rolloutCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
			r.ID, r.Tenant.OrgID, string(r.Tenant.Mode), r.Version, string(sites), string(edges), r.WindowStart, r.WindowMinutes,
			nullTime(r.Deadline), r.FirstPercent, r.State, r.Reason, r.CreatedAt, nullTime(r.CancelledAt))
		if err != nil {
			return translate("create rollout", err)
		}
		return nil
	}))
}

// Rollout implements cloud.Store.
func (s *Store) Rollout(ctx context.Context, t cloud.Tenant, id string) (cloud.Rollout, error) {
	return one(ctx, s.pool, scanRollout, "get rollout", `SELECT `+rolloutCols+` FROM rollouts WHERE id = $1 AND org_id = $2 AND mode = $3`,
		id, t.OrgID, string(t.Mode))
}

// Rollouts implements cloud.Store.
func (s *Store) Rollouts(ctx context.Context, t cloud.Tenant) ([]cloud.Rollout, error) {
	out, err := many(ctx, s.pool, scanRollout, "list rollouts",
		`SELECT `+rolloutCols+` FROM rollouts WHERE org_id = $1 AND mode = $2 ORDER BY created_at DESC, id DESC`, t.OrgID, string(t.Mode))
	if out == nil && err == nil {
		out = []cloud.Rollout{}
	}
	return out, err
}

// SetRolloutState implements cloud.Store.
func (s *Store) SetRolloutState(ctx context.Context, t cloud.Tenant, id, state, reason string, at *time.Time) error {
	return classify(s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE rollouts SET state = CASE WHEN state = $1 THEN state ELSE $2 END, reason = $3,
				cancelled_at = coalesce(cancelled_at, $4) WHERE id = $5 AND org_id = $6 AND mode = $7`,
			cloud.RolloutCancelled, state, reason, nullTime(at), id, t.OrgID, string(t.Mode))
		if err != nil {
			return fmt.Errorf("set rollout state: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return cloud.ErrNotFound
		}
		return nil
	}))
}

const edgeUpdateCols = `edge_id, org_id, mode, version, slot, state, target, bytes, size, error, last_version, last_outcome, last_reason, last_at, polled_at`

func scanEdgeUpdate(r scanner) (cloud.EdgeUpdate, error) {
	var u cloud.EdgeUpdate
	var mode string
	var last pgtype.Timestamptz
	err := r.Scan(&u.EdgeID, &u.Tenant.OrgID, &mode, &u.Version, &u.Slot, &u.State, &u.Target, &u.Bytes, &u.Size, &u.Error,
		&u.LastVersion, &u.LastOutcome, &u.LastReason, &last, &u.PolledAt)
	u.Tenant.Mode, u.LastAt, u.PolledAt = cloud.Mode(mode), timePtr(last), u.PolledAt.UTC()
	return u, err
}

// PutEdgeUpdate implements cloud.Store.
func (s *Store) PutEdgeUpdate(ctx context.Context, u cloud.EdgeUpdate, prev *time.Time) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO edge_updates (`+edgeUpdateCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
		ON CONFLICT (edge_id) DO UPDATE SET version = excluded.version, slot = excluded.slot, state = excluded.state, target = excluded.target,
			bytes = excluded.bytes, size = excluded.size, error = excluded.error, polled_at = excluded.polled_at,
			last_version = CASE WHEN excluded.last_outcome = '' THEN edge_updates.last_version ELSE excluded.last_version END,
			last_reason = CASE WHEN excluded.last_outcome = '' THEN edge_updates.last_reason ELSE excluded.last_reason END,
			last_at = CASE WHEN excluded.last_outcome = '' THEN edge_updates.last_at ELSE excluded.last_at END,
			last_outcome = CASE WHEN excluded.last_outcome = '' THEN edge_updates.last_outcome ELSE excluded.last_outcome END
		WHERE edge_updates.polled_at = $16`,
			u.EdgeID, u.Tenant.OrgID, string(u.Tenant.Mode), u.Version, u.Slot, u.State, u.Target, u.Bytes, u.Size, u.Error,
			u.LastVersion, u.LastOutcome, u.LastReason, nullTime(u.LastAt), u.PolledAt, nullTime(prev))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("edge %s polled meanwhile: %w", u.EdgeID, cloud.ErrConflict)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("put edge update: %w", classify(err))
	}
	return nil
}

// EdgeUpdates implements cloud.Store.
func (s *Store) EdgeUpdates(ctx context.Context, t cloud.Tenant, edgeID string) ([]cloud.EdgeUpdate, error) {
	return many(ctx, s.pool, scanEdgeUpdate, "edge updates",
		`SELECT `+edgeUpdateCols+` FROM edge_updates WHERE org_id = $1 AND mode = $2 AND ($3 = '' OR edge_id = $3) ORDER BY edge_id`,
		t.OrgID, string(t.Mode), edgeID)
}

// SetEdgeIdentityKey implements cloud.Store.
func (s *Store) SetEdgeIdentityKey(ctx context.Context, edgeID string, key ed25519.PublicKey) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var other int
		err := tx.QueryRow(ctx, `SELECT 1 FROM edges WHERE identity_key = $1 AND id <> $2 AND revoked_at IS NULL`, []byte(key), edgeID).Scan(&other)
		switch {
		case err == nil:
			return fmt.Errorf("set identity key: another edge has it: %w", cloud.ErrConflict)
		case !errors.Is(err, pgx.ErrNoRows):
			return classify(translate("set identity key", err))
		}
		tag, err := tx.Exec(ctx, `UPDATE edges SET identity_key = $1 WHERE id = $2`, []byte(key), edgeID)
		if err != nil {
			return classify(translate("set identity key", err))
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("set identity key: edge %s: %w", edgeID, cloud.ErrNotFound)
		}
		return nil
	})
}
