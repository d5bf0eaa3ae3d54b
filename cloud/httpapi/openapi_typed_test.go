package httpapi_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/gosource"
)

// auditActions are the audit actions the cloud records: the values of
// package cloud's string constants named Audit..., read from its source so
// that a new action cannot be added without the document knowing it.
func auditActions(t *testing.T) []string {
	t.Helper()
	consts, err := gosource.Consts("..")
	require.NoError(t, err)
	var actions []string
	for _, c := range consts {
		if strings.HasPrefix(c.Name, "Audit") && c.String {
			actions = append(actions, c.Value)
		}
	}
	slices.Sort(actions)
	require.Contains(t, actions, "visit.pass_rules_overridden", "the audit actions were found in package cloud")
	return actions
}

// requireClosedObject fails t unless ref names a component schema that is
// an object with additionalProperties false: a type a generator can name,
// not a bare object (a map of anything).
func requireClosedObject(t *testing.T, ref *openapi3.SchemaRef, what string) *openapi3.Schema {
	t.Helper()
	require.NotNil(t, ref, what)
	name, ok := strings.CutPrefix(ref.Ref, "#/components/schemas/")
	require.True(t, ok, "%s refers to a named schema, not an inline one", what)
	require.NotEmpty(t, name, what)
	s := ref.Value
	require.NotNil(t, s, what)
	require.True(t, s.Type.Is("object"), "%s (%s) is an object", what, name)
	require.NotNil(t, s.AdditionalProperties.Has, "%s (%s) states additionalProperties", what, name)
	require.False(t, *s.AdditionalProperties.Has, "%s (%s) is closed: additionalProperties false", what, name)
	for prop, p := range s.Properties {
		v := p.Value
		require.True(t, p.Ref != "" || v.Type != nil && len(v.Type.Slice()) > 0 || len(v.OneOf) > 0 || len(v.AnyOf) > 0 || len(v.Enum) > 0,
			"%s (%s): property %s is typed", what, name, prop)
	}
	return s
}

// TestOpenAPI_AuditDetailIsTyped: AuditEvent is a oneOf keyed by action
// whose discriminator maps every action the cloud records; each branch's
// action enum is exactly the actions mapped to it, and its detail is a
// named, closed object (issue 19: "type audit detail").
func TestOpenAPI_AuditDetailIsTyped(t *testing.T) {
	schemas := loadOpenAPI(t).doc.Components.Schemas
	audit := schemas["AuditEvent"]
	require.NotNil(t, audit)
	mapped := requireDiscriminated(t, audit.Value, "action")
	require.Equal(t, auditActions(t), mapped, "the discriminator maps every audit action the cloud records, and no other")
	for _, b := range audit.Value.OneOf {
		require.Contains(t, b.Value.Required, "detail", "%s: detail is required", b.Ref)
		requireClosedObject(t, b.Value.Properties["detail"], b.Ref+": detail")
	}
	page := schemas["AuditEventPage"].Value.Properties["data"].Value.Items
	require.Equal(t, "#/components/schemas/AuditEvent", page.Ref, "the audit list holds AuditEvents")
}

// TestOpenAPI_FormSchemaIsTyped: every schema property of the document (a
// visit type's whole and public form) is the named FormSchema, a closed
// object whose questions are FormQuestion and whose rules are FormRule
// (issue 19: "type form schema").
func TestOpenAPI_FormSchemaIsTyped(t *testing.T) {
	doc := loadOpenAPI(t).doc
	var holders []string
	for name, s := range doc.Components.Schemas {
		if p, ok := s.Value.Properties["schema"]; ok {
			holders = append(holders, name)
			require.Equal(t, "#/components/schemas/FormSchema", p.Ref, "%s.schema is the named FormSchema", name)
		}
	}
	slices.Sort(holders)
	require.Equal(t, []string{"Form", "PublicForm"}, holders, "the objects holding a form")

	form := requireClosedObject(t, doc.Components.Schemas["Form"].Value.Properties["schema"], "Form.schema")
	questions := form.Properties["properties"]
	require.NotNil(t, questions, "FormSchema has properties (the questions)")
	require.NotNil(t, questions.Value.AdditionalProperties.Schema, "the questions are a map of typed questions")
	requireClosedObject(t, questions.Value.AdditionalProperties.Schema, "a form question")
	require.Equal(t, "#/components/schemas/FormQuestion", questions.Value.AdditionalProperties.Schema.Ref)
	rules := form.Properties["allOf"]
	require.NotNil(t, rules, "FormSchema has allOf (the rules)")
	requireClosedObject(t, rules.Value.Items, "a form rule")
	require.Equal(t, "#/components/schemas/FormRule", rules.Value.Items.Ref)
	order := form.Properties["x-svc-order"]
	require.NotNil(t, order, "FormSchema has x-svc-order")
	require.True(t, order.Value.Type.Is("array"))
}

// requireDiscriminated checks a oneOf with a discriminator on prop: one
// branch per object the mapping names, each branch's prop enum exactly
// the values mapped to it. It returns the mapped values, sorted.
func requireDiscriminated(t *testing.T, s *openapi3.Schema, prop string) []string {
	t.Helper()
	require.NotNil(t, s.Discriminator, "a discriminator on %s", prop)
	require.Equal(t, prop, s.Discriminator.PropertyName)
	var mapped []string
	branches := map[string][]string{} // ref → the values mapped to it
	for v, m := range s.Discriminator.Mapping {
		mapped = append(mapped, v)
		branches[m.Ref] = append(branches[m.Ref], v)
	}
	slices.Sort(mapped)
	require.Len(t, s.OneOf, len(branches), "one branch per object")
	for _, b := range s.OneOf {
		values, ok := branches[b.Ref]
		require.True(t, ok, "%s: the discriminator maps to it", b.Ref)
		slices.Sort(values)
		var got []string
		for _, v := range b.Value.Properties[prop].Value.Enum {
			got = append(got, v.(string))
		}
		require.Equal(t, values, got, "%s: %s lists exactly the values mapped to it", b.Ref, prop)
	}
	return mapped
}
