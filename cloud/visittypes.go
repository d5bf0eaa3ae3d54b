package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/svc-vms/svc/shared/form"
	"github.com/svc-vms/svc/shared/passrule"
)

// MaxVisitTypeKeyLen is the longest visit type key (the spec's limit).
const MaxVisitTypeKeyLen = 40

var visitTypeKey = regexp.MustCompile(`^[a-z][a-z0-9_]{0,39}$`)

// ValidVisitTypeKey reports whether s has the shape of a visit type key.
func ValidVisitTypeKey(s string) bool { return visitTypeKey.MatchString(s) }

// builtinTypes are the defaults every organisation starts with, in both
// modes (docs/decisions.md, "Built-in visit types").
var builtinTypes = []struct {
	key, name       string
	preRegistration bool
	needsApproval   bool
	rules           passrule.Rules
}{
	{"meeting", "Meeting", true, false, passrule.Rules{Window: passrule.Window{Before: 60, After: 60}}},
	{"interview", "Interview", true, true, passrule.Rules{Window: passrule.Window{Before: 30, After: 30}}},
	{"delivery", "Delivery", false, false, passrule.Rules{Window: passrule.Window{Before: 30, After: 30}, SingleUse: true}},
	{"contractor", "Contractor", true, true, passrule.Rules{Window: passrule.Window{Before: 60, After: 0},
		Daily: &passrule.Daily{From: 7 * 60, Until: 19 * 60}}},
	{"event", "Event", false, false, passrule.Rules{Window: passrule.Window{Before: 120, After: 60}}},
	{"other", "Other", false, false, passrule.Rules{Window: passrule.Window{Before: 60, After: 60}}},
}

// putBuiltinTypes gives a tenant the six built-in visit types.
func (s *Service) putBuiltinTypes(ctx context.Context, t Tenant) error {
	now := s.Now()
	for _, b := range builtinTypes {
		vt := VisitType{Tenant: t, Key: b.key, Name: b.name, Enabled: true, PreRegistration: b.preRegistration,
			NeedsApproval: b.needsApproval, Form: form.Default(b.key), FormVersion: 1, PassRules: b.rules,
			CreatedAt: now, UpdatedAt: now}
		if err := s.PutVisitType(ctx, vt); err != nil {
			return err
		}
	}
	return nil
}

// PutVisitType checks a visit type (key, form, pass-rule defaults) and
// stores it, replacing one with the same key. The API only reads visit
// types; the console, seeding and the command line write them.
func (s *Service) PutVisitType(ctx context.Context, vt VisitType) error {
	var v ValidationError
	if !ValidVisitTypeKey(vt.Key) {
		v.Add("key", "must match ^[a-z][a-z0-9_]{0,39}$")
	}
	checkText(&v, "name", vt.Name, true, MaxNameLen)
	if _, err := parseForm(vt.Form); err != nil {
		v.Add("form", "%v", err)
	}
	for _, fe := range vt.PassRules.Validate() {
		v.Add("pass_rules."+fe.Field, "%s", fe.Message)
	}
	if err := v.Err(); err != nil {
		return fmt.Errorf("put visit type %s: %w", vt.Key, err)
	}
	if vt.FormVersion < 1 {
		vt.FormVersion = 1
	}
	if vt.CreatedAt.IsZero() {
		vt.CreatedAt = s.Now()
	}
	if vt.UpdatedAt.IsZero() {
		vt.UpdatedAt = vt.CreatedAt
	}
	if err := s.store.PutVisitType(ctx, vt); err != nil {
		return fmt.Errorf("put visit type %s: %w", vt.Key, err)
	}
	return nil
}

// VisitTypeView is a visit type as a caller may see it: its parsed form,
// and the public form when pre-registration is open.
type VisitTypeView struct {
	VisitType
	PublicForm json.RawMessage // nil unless pre-registration is open
}

func view(vt VisitType) (VisitTypeView, error) {
	out := VisitTypeView{VisitType: vt}
	if !vt.PreRegistration {
		return out, nil
	}
	f, err := parseForm(vt.Form)
	if err != nil {
		return out, fmt.Errorf("visit type %s: stored form: %w", vt.Key, err)
	}
	out.PublicForm = f.Public()
	return out, nil
}

// VisitType returns one visit type. With public set (a publishable key)
// a type that is off or closed to pre-registration is not found.
func (s *Service) VisitType(ctx context.Context, t Tenant, key string, public bool) (VisitTypeView, error) {
	if !ValidVisitTypeKey(key) {
		return VisitTypeView{}, ErrNotFound
	}
	vt, err := s.store.VisitType(ctx, t, key)
	if err != nil {
		return VisitTypeView{}, err
	}
	if public && !(vt.Enabled && vt.PreRegistration) {
		return VisitTypeView{}, ErrNotFound
	}
	return view(vt)
}

// ListVisitTypes returns a page of visit types; public as for VisitType.
func (s *Service) ListVisitTypes(ctx context.Context, t Tenant, public bool, p Page) ([]VisitTypeView, bool, error) {
	vts, more, err := s.store.ListVisitTypes(ctx, t, VisitTypeFilter{Public: public}, p)
	if err != nil {
		return nil, false, err
	}
	out := make([]VisitTypeView, len(vts))
	for i, vt := range vts {
		if out[i], err = view(vt); err != nil {
			return nil, false, err
		}
	}
	return out, more, nil
}

// usableType returns the type a visit may be created with or changed to,
// adding a problem at field when there is none: unknown, turned off, or
// (public) closed to pre-registration.
func (s *Service) usableType(ctx context.Context, v *ValidationError, t Tenant, field, key string, public bool) (*VisitType, *form.Form, error) {
	if !ValidVisitTypeKey(key) {
		v.Add(field, "must be a visit type key (^[a-z][a-z0-9_]{0,39}$)")
		return nil, nil, nil
	}
	vt, err := s.store.VisitType(ctx, t, key)
	switch {
	case public && (errors.Is(err, ErrNotFound) || err == nil && (!vt.Enabled || !vt.PreRegistration)):
		// One answer for every type a publishable key cannot use, as
		// reading one is not_found: it learns nothing of closed types.
		v.Add(field, "no visit type %q is open for pre-registration", key)
		return nil, nil, nil
	case errors.Is(err, ErrNotFound):
		v.Add(field, "the organisation has no visit type %q", key)
		return nil, nil, nil
	case err != nil:
		return nil, nil, err
	case !vt.Enabled:
		v.Add(field, "visit type %q is turned off", key)
		return nil, nil, nil
	}
	f, err := parseForm(vt.Form)
	if err != nil {
		return nil, nil, fmt.Errorf("visit type %s: stored form: %w", key, err)
	}
	return &vt, f, nil
}
