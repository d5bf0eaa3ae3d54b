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
	require.NotNil(t, audit.Value.Discriminator, "AuditEvent has a discriminator")
	require.Equal(t, "action", audit.Value.Discriminator.PropertyName)
	var mapped []string
	branches := map[string][]string{} // ref → the actions mapped to it
	for action, m := range audit.Value.Discriminator.Mapping {
		mapped = append(mapped, action)
		branches[m.Ref] = append(branches[m.Ref], action)
	}
	slices.Sort(mapped)
	require.Equal(t, auditActions(t), mapped, "the discriminator maps every audit action the cloud records, and no other")
	require.Len(t, audit.Value.OneOf, len(branches), "one branch per object")
	for _, b := range audit.Value.OneOf {
		actions, ok := branches[b.Ref]
		require.True(t, ok, "%s: the discriminator maps to it", b.Ref)
		slices.Sort(actions)
		var got []string
		for _, v := range b.Value.Properties["action"].Value.Enum {
			got = append(got, v.(string))
		}
		require.Equal(t, actions, got, "%s: action lists exactly the actions mapped to it", b.Ref)
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
