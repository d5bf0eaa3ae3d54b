package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/storedoc"
	"github.com/svc-vms/svc/sync/protocol"
)

const visitTypeCols = `key, name, enabled, pre_registration, needs_approval, form, form_version, pass_rules, created_at, updated_at`

func scanVisitType(row scanner, t cloud.Tenant) (cloud.VisitType, error) {
	vt := cloud.VisitType{Tenant: t}
	var form, rules []byte
	err := row.Scan(&vt.Key, &vt.Name, &vt.Enabled, &vt.PreRegistration, &vt.NeedsApproval, &form, &vt.FormVersion,
		&rules, &vt.CreatedAt, &vt.UpdatedAt)
	if err != nil {
		return cloud.VisitType{}, err
	}
	vt.Form = form
	if vt.PassRules, err = storedoc.DecodeRules(rules); err != nil {
		return cloud.VisitType{}, err
	}
	vt.CreatedAt, vt.UpdatedAt = vt.CreatedAt.UTC(), vt.UpdatedAt.UTC()
	return vt, nil
}

// PutVisitType implements cloud.Store. The form is stored as json, which
// keeps its text as given; a nil form is NULL and reads back nil. The
// type goes out on the feed of every site of the tenant, for the
// reception kiosks.
func (s *Store) PutVisitType(ctx context.Context, vt cloud.VisitType) error {
	rules, err := storedoc.EncodeRules(vt.PassRules)
	if err != nil {
		return fmt.Errorf("put visit type: %w", err)
	}
	err = s.writeTx(ctx, vt.Tenant, func(tx pgx.Tx, f *feed) error {
		if _, err := tx.Exec(ctx, `INSERT INTO visit_types (org_id, mode, `+visitTypeCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
		ON CONFLICT (org_id, mode, key) DO UPDATE SET name = excluded.name, enabled = excluded.enabled,
			pre_registration = excluded.pre_registration, needs_approval = excluded.needs_approval, form = excluded.form,
			form_version = excluded.form_version, pass_rules = excluded.pass_rules, updated_at = excluded.updated_at`,
			vt.Tenant.OrgID, string(vt.Tenant.Mode), vt.Key, vt.Name, vt.Enabled, vt.PreRegistration, vt.NeedsApproval,
			[]byte(vt.Form), vt.FormVersion, rules, vt.CreatedAt, vt.UpdatedAt); err != nil {
			return err
		}
		ev := cloud.EdgeVisitType(vt)
		return toSites(ctx, tx, f, vt.Tenant, protocol.Change{At: vt.UpdatedAt, VisitType: &ev})
	})
	if err != nil {
		return translate("put visit type", err)
	}
	return nil
}

// VisitType implements cloud.Store.
func (s *Store) VisitType(ctx context.Context, t cloud.Tenant, key string) (cloud.VisitType, error) {
	return readByKey(ctx, s, aheadVisitType, t, key, qVisitType, visitTypeRead)
}

const qVisitType = `SELECT ` + visitTypeCols + ` FROM visit_types WHERE org_id = $1 AND mode = $2 AND key = $3`

// visitTypeRead reads qVisitType's row as VisitType returns it.
func visitTypeRead(t cloud.Tenant) func(pgx.Row) (cloud.VisitType, error) {
	return oneRow(scanVisitType, t, "get visit type")
}

// ListVisitTypes implements cloud.Store. Position.ID is the key.
func (s *Store) ListVisitTypes(ctx context.Context, t cloud.Tenant, f cloud.VisitTypeFilter, p cloud.Page) ([]cloud.VisitType, bool, error) {
	l := newListOn(visitTypeCols, "visit_types", "", "key", t)
	if f.Public {
		l.sql.WriteString(" AND enabled AND pre_registration")
	}
	l.page(p)
	out, more, err := collect(ctx, s.pool, l, p.Limit, func(row pgx.CollectableRow) (cloud.VisitType, error) {
		return scanVisitType(row, t)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list visit types: %w", err)
	}
	return out, more, nil
}
