package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storedoc"
	"github.com/svc-vms/svc/sync/protocol"
)

const visitTypeCols = `org_id, mode, key, name, enabled, pre_registration, needs_approval, form, form_version, pass_rules, created_at, updated_at`

func scanVisitType(r scanner) (cloud.VisitType, error) {
	var vt cloud.VisitType
	var mode, rules string
	var form sql.NullString
	var created, updated int64
	err := r.Scan(&vt.Tenant.OrgID, &mode, &vt.Key, &vt.Name, &vt.Enabled, &vt.PreRegistration, &vt.NeedsApproval,
		&form, &vt.FormVersion, &rules, &created, &updated)
	if err != nil {
		return vt, err
	}
	vt.Tenant.Mode, vt.CreatedAt, vt.UpdatedAt = cloud.Mode(mode), fromMicros(created), fromMicros(updated)
	if form.Valid {
		vt.Form = []byte(form.String)
	}
	vt.PassRules, err = storedoc.DecodeRules([]byte(rules))
	return vt, err
}

// PutVisitType implements cloud.Store. The form is stored as text, as
// given; a nil form is NULL and reads back nil. The type goes out on the
// feed of every site of the tenant, for the reception kiosks.
func (s *Store) PutVisitType(ctx context.Context, vt cloud.VisitType) error {
	rules, err := storedoc.EncodeRules(vt.PassRules)
	if err != nil {
		return fmt.Errorf("put visit type: %w", err)
	}
	var form any
	if vt.Form != nil {
		form = string(vt.Form)
	}
	err = s.writeTx(ctx, vt.Tenant, func(tx *sql.Tx, f *feed) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO visit_types (`+visitTypeCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (org_id, mode, key) DO UPDATE SET name = excluded.name, enabled = excluded.enabled,
			pre_registration = excluded.pre_registration, needs_approval = excluded.needs_approval, form = excluded.form,
			form_version = excluded.form_version, pass_rules = excluded.pass_rules, updated_at = excluded.updated_at`,
			vt.Tenant.OrgID, string(vt.Tenant.Mode), vt.Key, vt.Name, boolInt(vt.Enabled), boolInt(vt.PreRegistration),
			boolInt(vt.NeedsApproval), form, vt.FormVersion, string(rules), micros(vt.CreatedAt), micros(vt.UpdatedAt)); err != nil {
			return err
		}
		ev := cloud.EdgeVisitType(vt)
		return toSites(ctx, tx, f, vt.Tenant, protocol.Change{At: vt.UpdatedAt, VisitType: &ev})
	})
	if err != nil {
		return fmt.Errorf("put visit type: %w", err)
	}
	return nil
}

// VisitType implements cloud.Store.
func (s *Store) VisitType(ctx context.Context, t cloud.Tenant, key string) (cloud.VisitType, error) {
	return get(ctx, s.r, scanVisitType, `SELECT `+visitTypeCols+` FROM visit_types WHERE org_id = ? AND mode = ? AND key = ?`,
		t.OrgID, string(t.Mode), key)
}

// ListVisitTypes implements cloud.Store. Position.ID is the key.
func (s *Store) ListVisitTypes(ctx context.Context, t cloud.Tenant, f cloud.VisitTypeFilter, p cloud.Page) ([]cloud.VisitType, bool, error) {
	var q strings.Builder
	q.WriteString(`SELECT ` + visitTypeCols + ` FROM visit_types WHERE org_id = ? AND mode = ?`)
	if f.Public {
		q.WriteString(` AND enabled = 1 AND pre_registration = 1`)
	}
	args := keysetOn(&q, []any{t.OrgID, string(t.Mode)}, p, "", "key")
	out, more, err := list(ctx, s.r, scanVisitType, p.Limit, q.String(), args...)
	if err != nil {
		return nil, false, fmt.Errorf("list visit types: %w", err)
	}
	return out, more, nil
}
