package form_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/form"
	"github.com/svc-vms/svc/shared/ids"
)

var (
	siteA  = ids.New(ids.Site)
	siteB  = ids.New(ids.Site)
	person = ids.New(ids.Person)
)

// kitchenSink uses every keyword and annotation of the subset. Its visitor
// questions: name, code, email, day, phone, size, count, guests, agree,
// badge, secret, car, plate_colour.
const kitchenSink = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "Everything",
  "description": "A form using every keyword.",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "name": {"type": "string", "title": "Name", "description": "Yours.", "minLength": 2, "maxLength": 5, "x-svc-type": "text", "x-svc-visitor": true},
    "code": {"type": "string", "pattern": "^[A-Z]{3}$", "x-svc-visitor": true},
    "email": {"type": "string", "format": "email", "x-svc-visitor": true},
    "day": {"type": "string", "format": "date", "x-svc-visitor": true},
    "at": {"type": "string", "format": "date-time"},
    "link": {"type": "string", "format": "uri"},
    "phone": {"type": "string", "x-svc-type": "phone", "x-svc-visitor": true},
    "notes": {"type": "string", "x-svc-type": "long_text"},
    "size": {"type": "string", "enum": ["s", "m", "l"], "x-svc-type": "choice", "x-svc-labels": {"s": "Small", "l": "Large"}, "x-svc-visitor": true},
    "count": {"type": "integer", "minimum": 1, "maximum": 10, "x-svc-unit": "people", "x-svc-visitor": true},
    "guests": {"type": "integer", "x-svc-visitor": true},
    "floor": {"type": "integer", "enum": [1, 2, 3], "x-svc-labels": {"1": "Ground", "3": "Top"}},
    "weight": {"type": "number", "minimum": 0.5, "maximum": 99.5, "x-svc-unit": "kg"},
    "agree": {"type": "boolean", "x-svc-type": "consent", "x-svc-consent-text": "I agree.", "x-svc-visitor": true},
    "host": {"type": "string", "x-svc-type": "person"},
    "badge": {"type": "string", "x-svc-sites": ["SITE_A"], "x-svc-visitor": true},
    "signature": {"type": "string", "x-svc-type": "signature"},
    "photo": {"type": "string", "x-svc-type": "photo"},
    "secret": {"type": "string", "x-svc-sensitive": true, "x-svc-visitor": true},
    "doc": {"type": "string", "x-svc-masked": true},
    "car": {"type": "boolean", "x-svc-type": "yes_no", "x-svc-labels": {"true": "Yes"}, "x-svc-visitor": true},
    "plate_colour": {"type": "string", "x-svc-show-if": {"field": "car", "equals": true}, "x-svc-visitor": true},
    "van": {"type": "boolean", "x-svc-show-if": {"field": "car", "equals": false}}
  },
  "required": ["name", "host", "car"],
  "allOf": [
    {"if": {"properties": {"car": {"const": true}}, "required": ["car"]}, "then": {"required": ["plate_colour", "doc"]}},
    {"if": {"properties": {"count": {"const": 2}}, "required": ["count"]}, "then": {"required": ["host"]}},
    {"if": {"properties": {"weight": {"const": 1.5}}, "required": ["weight"]}, "then": {"required": ["name"]}},
    {"if": {"properties": {"car": {"const": false}, "size": {"const": "l"}}, "required": ["size", "car"]}, "then": {"required": ["code"]}}
  ],
  "x-svc-order": ["name", "code", "email", "day", "at", "link", "phone", "notes", "size", "count", "guests", "floor",
    "weight", "agree", "host", "badge", "signature", "photo", "secret", "doc", "car", "plate_colour", "van"]
}`

func kitchenSinkJSON() []byte {
	return []byte(strings.ReplaceAll(kitchenSink, "SITE_A", siteA))
}

// kitchenSinkTree returns kitchenSink decoded, for tests to change.
func kitchenSinkTree(tb testing.TB) map[string]any {
	tb.Helper()
	var m map[string]any
	require.NoError(tb, json.Unmarshal(kitchenSinkJSON(), &m))
	return m
}

func mustParse(tb testing.TB, schema []byte) *form.Form {
	tb.Helper()
	f, err := form.Parse(schema)
	require.NoError(tb, err)
	return f
}

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// decode returns a canonical schema decoded, to assert on its parts.
func decode(tb testing.TB, b []byte) map[string]any {
	tb.Helper()
	var m map[string]any
	require.NoError(tb, json.Unmarshal(b, &m))
	return m
}

func TestDefault_EveryBuiltinTypeParses(t *testing.T) {
	require.Len(t, form.BuiltinTypes, 6)
	for _, vt := range form.BuiltinTypes {
		t.Run(vt, func(t *testing.T) {
			schema := form.Default(vt)
			require.NotNil(t, schema)
			f := mustParse(t, schema)
			assert.True(t, f.HasPublic(), "every default asks the visitor something")
			assert.NotEqual(t, len(f.Keys()), len(decode(t, f.Public())["x-svc-order"].([]any)),
				"every default has a question for staff only")
		})
	}
}

func TestDefault_UnknownType(t *testing.T) {
	for _, vt := range []string{"", "workshop", "../defaults/meeting", "Meeting", "meeting.json"} {
		assert.Nil(t, form.Default(vt), vt)
	}
}

func TestDefault_CallerOwnsTheBytes(t *testing.T) {
	a := form.Default("meeting")
	a[0] = 'X'
	assert.Equal(t, byte('{'), form.Default("meeting")[0])
}

func TestDefault_Contents(t *testing.T) {
	// What the brief for each default asks, so a default cannot lose it.
	cases := map[string]func(t *testing.T, f *form.Form){
		"meeting": func(t *testing.T, f *form.Form) {
			p := decode(t, f.Schema())["properties"].(map[string]any)
			assert.Contains(t, p, "company")
			assert.Equal(t, "consent", p["nda_accepted"].(map[string]any)["x-svc-type"])
			assert.NotEmpty(t, p["nda_accepted"].(map[string]any)["x-svc-consent-text"])
			assert.Equal(t, map[string]any{"field": "has_vehicle", "equals": true}, p["vehicle_type"].(map[string]any)["x-svc-show-if"])
			assert.NotEmpty(t, decode(t, f.Schema())["allOf"])
		},
		"interview": func(t *testing.T, f *form.Form) {
			id := raw(`"` + person + `"`)
			assert.Equal(t, []form.Ref{{Key: "recruiter", ID: person}}, f.PersonRefs(map[string]json.RawMessage{"recruiter": id}))
			_, errs := f.Validate(map[string]json.RawMessage{"recruiter": id}, form.Options{Public: true})
			assert.Equal(t, []form.FieldError{{Field: "recruiter", Message: "is not in this visit type's public form"}}, errs)
			doc := map[string]json.RawMessage{"id_document_number": raw(`"AB123456"`)}
			_, errs = f.Validate(doc, form.Options{Public: true})
			assert.Empty(t, errs)
			assert.Empty(t, f.Redact(doc))
		},
		"delivery": func(t *testing.T, f *form.Form) {
			_, errs := f.Validate(map[string]json.RawMessage{"carrier": raw(`"pigeon"`), "parcel_count": raw(`0`), "signature_required": raw(`true`)}, form.Options{})
			assert.Equal(t, []form.FieldError{
				{Field: "carrier", Message: "must be one of dhl, dpd, fedex, royal_mail, ups, other"},
				{Field: "parcel_count", Message: "must be at least 1"},
			}, errs)
		},
		"contractor": func(t *testing.T, f *form.Form) {
			in := map[string]json.RawMessage{"insurance_expiry": raw(`"2027-02-30"`), "safety_induction": raw(`true`)}
			_, errs := f.Validate(in, form.Options{SiteID: siteA})
			assert.Equal(t, []form.FieldError{
				{Field: "insurance_expiry", Message: "must be a date such as 2026-11-21"},
			}, errs, "the safety induction is asked at every site until an admin limits it")
		},
		"event": func(t *testing.T, f *form.Form) {
			in := map[string]json.RawMessage{"event_name": raw(`"Launch"`), "dietary_requirements": raw(`"vegan"`)}
			assert.Equal(t, map[string]json.RawMessage{"event_name": raw(`"Launch"`)}, f.Redact(in))
		},
		"other": func(t *testing.T, f *form.Form) {
			assert.Equal(t, []string{"reason", "reception_notes"}, f.Keys())
		},
	}
	require.Len(t, cases, len(form.BuiltinTypes))
	for vt, check := range cases {
		t.Run(vt, func(t *testing.T) { check(t, mustParse(t, form.Default(vt))) })
	}
}

func TestPersonRefs(t *testing.T) {
	f := mustParse(t, kitchenSinkJSON())
	refs := f.PersonRefs(map[string]json.RawMessage{
		"host":   raw(`"` + person + `"`),
		"name":   raw(`"` + person + `"`), // not a person question
		"zzz":    raw(`"` + person + `"`), // not a question
		"notes":  raw(`null`),
		"secret": raw(`1`),
	})
	assert.Equal(t, []form.Ref{{Key: "host", ID: person}}, refs)
	assert.Empty(t, f.PersonRefs(map[string]json.RawMessage{"host": raw(`"team_01h2xcejqtf2nbrexx3vqjhp41"`)}))
	assert.Empty(t, f.PersonRefs(map[string]json.RawMessage{"host": raw(`null`)}))
	assert.Empty(t, f.PersonRefs(nil))
}

func TestRedact_DropsSensitiveMaskedAndUnknown(t *testing.T) {
	f := mustParse(t, kitchenSinkJSON())
	in := map[string]json.RawMessage{
		"name":    raw(`"Ada"`),
		"count":   raw(`2`),
		"secret":  raw(`"x"`), // x-svc-sensitive
		"doc":     raw(`"y"`), // x-svc-masked
		"retired": raw(`"z"`), // no longer in the form
	}
	got := f.Redact(in)
	assert.Equal(t, map[string]json.RawMessage{"name": raw(`"Ada"`), "count": raw(`2`)}, got)
	assert.Len(t, in, 5, "the stored answers are untouched")
	assert.NotNil(t, f.Redact(nil))
	assert.Empty(t, f.Redact(nil))
}

func TestPublic_KeepsOnlyVisitorQuestions(t *testing.T) {
	f := mustParse(t, kitchenSinkJSON())
	pub := decode(t, f.Public())

	visitor := []string{"name", "code", "email", "day", "phone", "size", "count", "guests", "agree", "badge", "secret", "car", "plate_colour"}
	var keys []string
	for k := range pub["properties"].(map[string]any) {
		keys = append(keys, k)
	}
	assert.ElementsMatch(t, visitor, keys)
	assert.Equal(t, toAny(visitor), pub["x-svc-order"], "x-svc-order filtered, in screen order")
	assert.Equal(t, toAny([]string{"name", "car"}), pub["required"])
	assert.Equal(t, []any{
		map[string]any{
			"if":   map[string]any{"properties": map[string]any{"car": map[string]any{"const": true}}, "required": []any{"car"}},
			"then": map[string]any{"required": []any{"plate_colour"}},
		},
		map[string]any{
			"if": map[string]any{"properties": map[string]any{"car": map[string]any{"const": false}, "size": map[string]any{"const": "l"}},
				"required": []any{"size", "car"}},
			"then": map[string]any{"required": []any{"code"}},
		},
	}, pub["allOf"], "doc left out of the first; the count rule requires only host (staff); the weight rule asks about a staff question")
	assert.Equal(t, form.SchemaURI, pub["$schema"])
	assert.Equal(t, false, pub["additionalProperties"])
	assert.Equal(t, "Everything", pub["title"])
	assert.Equal(t, decode(t, f.Schema())["properties"].(map[string]any)["size"], pub["properties"].(map[string]any)["size"],
		"a visitor question is served whole")
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func TestPublic_RoundTrip(t *testing.T) {
	schemas := map[string][]byte{"kitchen sink": kitchenSinkJSON()}
	for _, vt := range form.BuiltinTypes {
		schemas[vt] = form.Default(vt)
	}
	for name, schema := range schemas {
		t.Run(name, func(t *testing.T) {
			f := mustParse(t, schema)
			p := mustParse(t, f.Public())
			assert.JSONEq(t, string(f.Public()), string(p.Schema()))
			assert.Equal(t, string(f.Public()), string(p.Schema()), "the public form is canonical")
			assert.Equal(t, string(f.Public()), string(p.Public()), "the public form of a public form is itself")
			assert.Equal(t, f.PublicVersion(), p.PublicVersion())
			for _, k := range p.Keys() {
				_, errs := p.Validate(map[string]json.RawMessage{k: raw(`null`)}, form.Options{Public: true})
				assert.Empty(t, errs, "%s is public", k)
			}
		})
	}
}

func TestPublic_NoVisitorQuestions(t *testing.T) {
	f := mustParse(t, []byte(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],
		"allOf":[{"if":{"properties":{"a":{"const":"x"}},"required":["a"]},"then":{"required":["a"]}}],"x-svc-order":["a"]}`))
	assert.False(t, f.HasPublic())
	assert.Equal(t, `{"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":false,"properties":{},"type":"object","x-svc-order":[]}`,
		string(f.Public()))
	mustParse(t, f.Public())
}

func TestPublicVersion_ChangesOnlyWithThePublicForm(t *testing.T) {
	base := mustParse(t, kitchenSinkJSON())
	assert.Regexp(t, `^[0-9a-f]{16}$`, base.PublicVersion())

	staff := kitchenSinkTree(t)
	staff["properties"].(map[string]any)["notes"].(map[string]any)["title"] = "Changed"
	assert.Equal(t, base.PublicVersion(), mustParse(t, mustMarshal(t, staff)).PublicVersion())

	visitor := kitchenSinkTree(t)
	visitor["properties"].(map[string]any)["name"].(map[string]any)["title"] = "Changed"
	assert.NotEqual(t, base.PublicVersion(), mustParse(t, mustMarshal(t, visitor)).PublicVersion())
}

func mustMarshal(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	require.NoError(tb, err)
	return b
}

func TestKeys_InScreenOrder(t *testing.T) {
	f := mustParse(t, form.Default("meeting"))
	assert.Equal(t, []string{"company", "agenda", "has_vehicle", "vehicle_type", "needs_parking", "nda_accepted", "meeting_room"}, f.Keys())
	k := f.Keys()
	k[0] = "changed"
	assert.Equal(t, "company", f.Keys()[0], "Keys returns a copy")
}
