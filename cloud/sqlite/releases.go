package sqlite

import (
	"context"
	"crypto/ed25519"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/svc-vms/svc/cloud"
)

const releaseCols = `version, platform, kind, size, sha256, envelope, created_at, added_at`

func scanRelease(r scanner) (cloud.Release, error) {
	var rel cloud.Release
	var created, added int64
	err := r.Scan(&rel.Version, &rel.Platform, &rel.Kind, &rel.Size, &rel.SHA256, &rel.Envelope, &created, &added)
	rel.CreatedAt, rel.AddedAt = fromMicros(created), fromMicros(added)
	return rel, err
}

// AddRelease implements cloud.Store.
func (s *Store) AddRelease(ctx context.Context, r cloud.Release, bundle io.Reader) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO releases (`+releaseCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Version, r.Platform, r.Kind, r.Size, r.SHA256, r.Envelope, micros(r.CreatedAt), micros(r.AddedAt))
		if isUniqueViolation(err) {
			return fmt.Errorf("add release %s %s: %w", r.Version, r.Platform, cloud.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("add release: %w", err)
		}
		buf := make([]byte, cloud.ReleaseChunk)
		for i := 0; ; i++ {
			n, err := io.ReadFull(bundle, buf)
			if n > 0 {
				if _, err := tx.ExecContext(ctx, `INSERT INTO release_chunks (version, platform, idx, data) VALUES (?, ?, ?, ?)`,
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
	})
}

// Release implements cloud.Store.
func (s *Store) Release(ctx context.Context, version, platform string) (cloud.Release, error) {
	return get(ctx, s.r, scanRelease, `SELECT `+releaseCols+` FROM releases WHERE version = ? AND platform = ?`, version, platform)
}

// ListReleases implements cloud.Store.
func (s *Store) ListReleases(ctx context.Context) ([]cloud.Release, error) {
	out, err := all(ctx, s.r, scanRelease, `SELECT `+releaseCols+` FROM releases ORDER BY added_at DESC, version DESC, platform`)
	if err != nil {
		return nil, fmt.Errorf("list releases: %w", err)
	}
	return out, nil
}

// ReleaseChunk implements cloud.Store.
func (s *Store) ReleaseChunk(ctx context.Context, version, platform string, index int) ([]byte, error) {
	var b []byte
	err := s.r.QueryRowContext(ctx, `SELECT data FROM release_chunks WHERE version = ? AND platform = ? AND idx = ?`, version, platform, index).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, cloud.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("release piece: %w", classify(err))
	}
	return b, nil
}

const rolloutCols = `id, org_id, mode, version, site_ids, edge_ids, window_start, window_minutes, deadline, first_percent, state, reason, created_at, cancelled_at`

func scanRollout(r scanner) (cloud.Rollout, error) {
	var ro cloud.Rollout
	var mode, sites, edges string
	var created int64
	var deadline, cancelled sql.NullInt64
	err := r.Scan(&ro.ID, &ro.Tenant.OrgID, &mode, &ro.Version, &sites, &edges, &ro.WindowStart, &ro.WindowMinutes, &deadline,
		&ro.FirstPercent, &ro.State, &ro.Reason, &created, &cancelled)
	if err != nil {
		return ro, err
	}
	ro.Tenant.Mode = cloud.Mode(mode)
	ro.CreatedAt, ro.Deadline, ro.CancelledAt = fromMicros(created), fromNullMicros(deadline), fromNullMicros(cancelled)
	if err := json.Unmarshal([]byte(sites), &ro.SiteIDs); err != nil {
		return ro, err
	}
	return ro, json.Unmarshal([]byte(edges), &ro.EdgeIDs)
}

// CreateRollout implements cloud.Store.
func (s *Store) CreateRollout(ctx context.Context, r cloud.Rollout) error {
	sites, _ := json.Marshal(r.SiteIDs)
	edges, _ := json.Marshal(r.EdgeIDs)
	return s.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO rollouts (`+rolloutCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.Tenant.OrgID, string(r.Tenant.Mode), r.Version, string(sites), string(edges), r.WindowStart, r.WindowMinutes,
			nullMicros(r.Deadline), r.FirstPercent, r.State, r.Reason, micros(r.CreatedAt), nullMicros(r.CancelledAt))
		if err != nil {
			return fmt.Errorf("create rollout: %w", err)
		}
		return nil
	})
}

// Rollout implements cloud.Store.
func (s *Store) Rollout(ctx context.Context, t cloud.Tenant, id string) (cloud.Rollout, error) {
	return get(ctx, s.r, scanRollout, `SELECT `+rolloutCols+` FROM rollouts WHERE id = ? AND org_id = ? AND mode = ?`, id, t.OrgID, string(t.Mode))
}

// Rollouts implements cloud.Store.
func (s *Store) Rollouts(ctx context.Context, t cloud.Tenant) ([]cloud.Rollout, error) {
	out, err := all(ctx, s.r, scanRollout, `SELECT `+rolloutCols+` FROM rollouts WHERE org_id = ? AND mode = ? ORDER BY created_at DESC, id DESC`,
		t.OrgID, string(t.Mode))
	if err != nil {
		return nil, fmt.Errorf("list rollouts: %w", err)
	}
	if out == nil {
		out = []cloud.Rollout{}
	}
	return out, nil
}

// SetRolloutState implements cloud.Store.
func (s *Store) SetRolloutState(ctx context.Context, t cloud.Tenant, id, state, reason string, at *time.Time) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE rollouts SET state = CASE WHEN state = ? THEN state ELSE ? END, reason = ?,
				cancelled_at = coalesce(cancelled_at, ?) WHERE id = ? AND org_id = ? AND mode = ?`,
			cloud.RolloutCancelled, state, reason, nullMicros(at), id, t.OrgID, string(t.Mode))
		if err != nil {
			return fmt.Errorf("set rollout state: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return cloud.ErrNotFound
		}
		return nil
	})
}

const edgeUpdateCols = `edge_id, org_id, mode, version, slot, state, target, bytes, size, error, last_version, last_outcome, last_reason, last_at, polled_at`

func scanEdgeUpdate(r scanner) (cloud.EdgeUpdate, error) {
	var u cloud.EdgeUpdate
	var mode string
	var polled int64
	var last sql.NullInt64
	err := r.Scan(&u.EdgeID, &u.Tenant.OrgID, &mode, &u.Version, &u.Slot, &u.State, &u.Target, &u.Bytes, &u.Size, &u.Error,
		&u.LastVersion, &u.LastOutcome, &u.LastReason, &last, &polled)
	u.Tenant.Mode, u.LastAt, u.PolledAt = cloud.Mode(mode), fromNullMicros(last), fromMicros(polled)
	return u, err
}

// PutEdgeUpdate implements cloud.Store.
func (s *Store) PutEdgeUpdate(ctx context.Context, u cloud.EdgeUpdate, prev *time.Time) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO edge_updates (`+edgeUpdateCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (edge_id) DO UPDATE SET version = excluded.version, slot = excluded.slot, state = excluded.state,
				target = excluded.target, bytes = excluded.bytes, size = excluded.size, error = excluded.error, polled_at = excluded.polled_at,
				last_version = CASE WHEN excluded.last_outcome = '' THEN last_version ELSE excluded.last_version END,
				last_reason = CASE WHEN excluded.last_outcome = '' THEN last_reason ELSE excluded.last_reason END,
				last_at = CASE WHEN excluded.last_outcome = '' THEN last_at ELSE excluded.last_at END,
				last_outcome = CASE WHEN excluded.last_outcome = '' THEN last_outcome ELSE excluded.last_outcome END
			WHERE edge_updates.polled_at = ?`,
			u.EdgeID, u.Tenant.OrgID, string(u.Tenant.Mode), u.Version, u.Slot, u.State, u.Target, u.Bytes, u.Size, u.Error,
			u.LastVersion, u.LastOutcome, u.LastReason, nullMicros(u.LastAt), micros(u.PolledAt), nullMicros(prev))
		if err != nil {
			return fmt.Errorf("put edge update: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return fmt.Errorf("put edge update: edge %s polled meanwhile: %w", u.EdgeID, cloud.ErrConflict)
		}
		return nil
	})
}

// EdgeUpdates implements cloud.Store.
func (s *Store) EdgeUpdates(ctx context.Context, t cloud.Tenant, edgeID string) ([]cloud.EdgeUpdate, error) {
	out, err := all(ctx, s.r, scanEdgeUpdate, `SELECT `+edgeUpdateCols+` FROM edge_updates WHERE org_id = ? AND mode = ? AND (? = '' OR edge_id = ?)
		ORDER BY edge_id`, t.OrgID, string(t.Mode), edgeID, edgeID)
	if err != nil {
		return nil, fmt.Errorf("edge updates: %w", err)
	}
	return out, nil
}

// SetEdgeIdentityKey implements cloud.Store.
func (s *Store) SetEdgeIdentityKey(ctx context.Context, edgeID string, key ed25519.PublicKey) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var other int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM edges WHERE identity_key = ? AND id <> ? AND revoked_at IS NULL`, []byte(key), edgeID).Scan(&other)
		switch {
		case err == nil:
			return fmt.Errorf("set identity key: another edge has it: %w", cloud.ErrConflict)
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("set identity key: %w", err)
		}
		res, err := tx.ExecContext(ctx, `UPDATE edges SET identity_key = ? WHERE id = ?`, []byte(key), edgeID)
		if err != nil {
			return fmt.Errorf("set identity key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("set identity key: edge %s: %w", edgeID, cloud.ErrNotFound)
		}
		return nil
	})
}
