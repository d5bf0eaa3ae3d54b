package form_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/form"
)

func prop(m map[string]any, key string) map[string]any {
	return m["properties"].(map[string]any)[key].(map[string]any)
}

func rule(m map[string]any, i int) map[string]any {
	return m["allOf"].([]any)[i].(map[string]any)
}

func TestParse_AcceptsKitchenSink(t *testing.T) {
	f := mustParse(t, kitchenSinkJSON())
	assert.Len(t, f.Keys(), 23)
	assert.True(t, f.HasPublic())
}

func TestParse_Accepts(t *testing.T) {
	cases := []struct {
		name   string
		schema string
	}{
		{"no questions", `{"type":"object","properties":{},"x-svc-order":[]}`},
		{"integer enum written as decimals", `{"type":"object","properties":{"n":{"type":"integer","enum":[1.0,2e0,30],"x-svc-labels":{"1":"One","2":"Two"}}},"x-svc-order":["n"]}`},
		{"number enum", `{"type":"object","properties":{"n":{"type":"number","enum":[0.5,1],"x-svc-labels":{"0.5":"Half"}}},"x-svc-order":["n"]}`},
		{"boolean enum", `{"type":"object","properties":{"ok":{"type":"boolean","enum":[true]}},"x-svc-order":["ok"]}`},
		{"key of 40 characters", `{"type":"object","properties":{"a234567890123456789012345678901234567890":{"type":"string"}},"x-svc-order":["a234567890123456789012345678901234567890"]}`},
		{"maxLength 10000", `{"type":"object","properties":{"a":{"type":"string","maxLength":10000}},"x-svc-order":["a"]}`},
		{"show-if on an integer", `{"type":"object","properties":{"n":{"type":"integer"},"m":{"type":"string","x-svc-show-if":{"field":"n","equals":3}}},"x-svc-order":["n","m"]}`},
		{"staff question depending on a visitor question", `{"type":"object","properties":{"n":{"type":"boolean","x-svc-visitor":true},"m":{"type":"string","x-svc-show-if":{"field":"n","equals":true}}},"x-svc-order":["n","m"]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := form.Parse([]byte(c.schema))
			assert.NoError(t, err)
		})
	}
}

func TestParse_Rejects(t *testing.T) {
	cases := []struct {
		name    string
		change  func(m map[string]any)
		pointer string
		message string // a distinguishing part of the message
	}{
		{"unknown keyword at the top", func(m map[string]any) { m["oneOf"] = []any{} }, "/oneOf", "not a keyword forms support"},
		{"unknown annotation at the top", func(m map[string]any) { m["x-svc-colour"] = "red" }, "/x-svc-colour", "not a keyword forms support"},
		{"unknown keyword in a question", func(m map[string]any) { prop(m, "name")["default"] = "Ada" }, "/properties/name/default", "not a keyword forms support"},
		{"unknown annotation in a question", func(m map[string]any) { prop(m, "name")["x-svc-colour"] = "red" }, "/properties/name/x-svc-colour", "not a keyword forms support"},
		{"exclusiveMinimum", func(m map[string]any) { prop(m, "count")["exclusiveMinimum"] = 0 }, "/properties/count/exclusiveMinimum", "not a keyword"},
		{"const in a question", func(m map[string]any) { prop(m, "name")["const"] = "x" }, "/properties/name/const", "not a keyword"},
		{"no type", func(m map[string]any) { delete(m, "type") }, "/type", "required"},
		{"type array", func(m map[string]any) { m["type"] = "array" }, "/type", `must be "object"`},
		{"$schema of another draft", func(m map[string]any) { m["$schema"] = "http://json-schema.org/draft-07/schema#" }, "/$schema", "2020-12"},
		{"additionalProperties true", func(m map[string]any) { m["additionalProperties"] = true }, "/additionalProperties", "must be false"},
		{"additionalProperties schema", func(m map[string]any) { m["additionalProperties"] = map[string]any{} }, "/additionalProperties", "must be false"},
		{"blank title", func(m map[string]any) { m["title"] = " " }, "/title", "blank"},
		{"no properties", func(m map[string]any) { delete(m, "properties") }, "/properties", "required"},
		{"properties an array", func(m map[string]any) { m["properties"] = []any{} }, "/properties", "must be an object"},
		{"question not an object", func(m map[string]any) { m["properties"].(map[string]any)["name"] = true }, "/properties/name", "must be an object"},
		{"question key with a capital", func(m map[string]any) { renameQuestion(m, "name", "Name") }, "/properties/Name", "not a valid question key"},
		{"question key of 41 characters", func(m map[string]any) { renameQuestion(m, "name", "a"+strings.Repeat("b", 40)) }, "/properties/a" + strings.Repeat("b", 40), "not a valid question key"},
		{"question key starting with a digit", func(m map[string]any) { renameQuestion(m, "name", "1st") }, "/properties/1st", "not a valid question key"},
		{"question key with a slash", func(m map[string]any) { renameQuestion(m, "name", "a/b") }, "/properties/a~1b", "not a valid question key"},
		{"question without type", func(m map[string]any) { delete(prop(m, "name"), "type") }, "/properties/name/type", "required"},
		{"question of type array", func(m map[string]any) { prop(m, "name")["type"] = "array" }, "/properties/name/type", "must be string, boolean, integer or number"},
		{"question of type null", func(m map[string]any) { prop(m, "name")["type"] = "object" }, "/properties/name/type", "must be string, boolean, integer or number"},
		{"question with a type list", func(m map[string]any) { prop(m, "name")["type"] = []any{"string", "null"} }, "/properties/name/type", "must be string"},
		{"too many questions", func(m map[string]any) {
			props := m["properties"].(map[string]any)
			for i := len(props); i <= form.MaxQuestions; i++ {
				k := fmt.Sprintf("q%d", i)
				props[k] = map[string]any{"type": "string"}
				m["x-svc-order"] = append(m["x-svc-order"].([]any), k)
			}
		}, "/properties", "at most 100"},

		{"x-svc-order missing", func(m map[string]any) { delete(m, "x-svc-order") }, "/x-svc-order", "required"},
		{"x-svc-order missing a key", func(m map[string]any) { m["x-svc-order"] = m["x-svc-order"].([]any)[1:] }, "/x-svc-order", "leaves out the question name"},
		{"x-svc-order with an extra key", func(m map[string]any) { m["x-svc-order"] = append(m["x-svc-order"].([]any), "extra") }, "/x-svc-order/23", "names no question"},
		{"x-svc-order with a key twice", func(m map[string]any) { m["x-svc-order"] = append(m["x-svc-order"].([]any), "code") }, "/x-svc-order/23", "repeats /x-svc-order/1"},
		{"x-svc-order not strings", func(m map[string]any) { m["x-svc-order"] = append(m["x-svc-order"].([]any), 1) }, "/x-svc-order/23", "must be a question key"},
		{"required naming no question", func(m map[string]any) { m["required"] = []any{"name", "nope"} }, "/required/1", "names no question"},
		{"required with a key twice", func(m map[string]any) { m["required"] = []any{"name", "name"} }, "/required/1", "repeats"},

		{"enum with a value of another type", func(m map[string]any) { prop(m, "size")["enum"] = []any{"s", 1} }, "/properties/size/enum/1", "must be a string"},
		{"integer enum with a fraction", func(m map[string]any) { prop(m, "floor")["enum"] = []any{1, 1.5} }, "/properties/floor/enum/1", "must be a whole number"},
		{"boolean enum with a string", func(m map[string]any) { prop(m, "car")["enum"] = []any{"true"} }, "/properties/car/enum/0", "must be true or false"},
		{"enum repeating a value", func(m map[string]any) { prop(m, "size")["enum"] = []any{"s", "m", "s"} }, "/properties/size/enum/2", "repeats /properties/size/enum/0"},
		{"integer enum repeating a value written otherwise", func(m map[string]any) { prop(m, "floor")["enum"] = []any{1, 2, json.Number("1.0")} }, "/properties/floor/enum/2", "repeats"},
		{"empty enum", func(m map[string]any) { prop(m, "size")["enum"] = []any{} }, "/properties/size/enum", "1 to 200"},
		{"enum with null", func(m map[string]any) { prop(m, "size")["enum"] = []any{"s", nil} }, "/properties/size/enum/1", "null"},
		{"enum with an empty string", func(m map[string]any) { prop(m, "size")["enum"] = []any{"s", ""} }, "/properties/size/enum/1", "may not be empty"},
		{"enum value breaking the question's own rules", func(m map[string]any) { prop(m, "count")["enum"] = []any{1, 11} }, "/properties/count/enum/1", "must be at most 10"},

		{"maxLength above 10000", func(m map[string]any) { prop(m, "name")["maxLength"] = 10001 }, "/properties/name/maxLength", "0 to 10000"},
		{"maxLength 0", func(m map[string]any) { prop(m, "name")["maxLength"] = 0 }, "/properties/name/maxLength", "at least 1"},
		{"maxLength a string", func(m map[string]any) { prop(m, "name")["maxLength"] = "5" }, "/properties/name/maxLength", "must be an integer"},
		{"minLength above maxLength", func(m map[string]any) { prop(m, "name")["minLength"] = 6 }, "/properties/name/minLength", "must not exceed the maximum length (5)"},
		{"minLength above the default maxLength", func(m map[string]any) { prop(m, "code")["minLength"] = 2001 }, "/properties/code/minLength", "(2000)"},
		{"maxLength on an integer", func(m map[string]any) { prop(m, "count")["maxLength"] = 3 }, "/properties/count/maxLength", "applies only to string questions"},
		{"minimum on a string", func(m map[string]any) { prop(m, "name")["minimum"] = 3 }, "/properties/name/minimum", "applies only to integer and number questions"},
		{"consent text on a string", func(m map[string]any) { prop(m, "name")["x-svc-consent-text"] = "Yes" }, "/properties/name/x-svc-consent-text", "applies only to boolean questions"},
		{"unit on a boolean", func(m map[string]any) { prop(m, "car")["x-svc-unit"] = "cars" }, "/properties/car/x-svc-unit", "applies only to integer and number"},
		{"bad regexp", func(m map[string]any) { prop(m, "code")["pattern"] = "([A-Z]" }, "/properties/code/pattern", "not a valid regular expression"},
		{"lookahead regexp", func(m map[string]any) { prop(m, "code")["pattern"] = "^(?=A)" }, "/properties/code/pattern", "not a valid regular expression"},
		{"unknown format", func(m map[string]any) { prop(m, "email")["format"] = "ipv4" }, "/properties/email/format", "email, date, date-time or uri"},
		{"minimum above maximum", func(m map[string]any) { prop(m, "count")["minimum"] = 11 }, "/properties/count/minimum", "must not exceed maximum"},
		{"number minimum above maximum", func(m map[string]any) { prop(m, "weight")["maximum"] = 0.25 }, "/properties/weight/minimum", "must not exceed maximum"},
		{"integer maximum with a fraction", func(m map[string]any) { prop(m, "count")["maximum"] = 9.5 }, "/properties/count/maximum", "must be an integer"},
		{"integer maximum beyond 2^53", func(m map[string]any) { prop(m, "count")["maximum"] = json.Number("9007199254740992") }, "/properties/count/maximum", "must be an integer between"},
		{"number maximum beyond float64", func(m map[string]any) { prop(m, "weight")["maximum"] = json.Number("1e400") }, "/properties/weight/maximum", "too large"},

		{"unknown x-svc-type", func(m map[string]any) { prop(m, "name")["x-svc-type"] = "colour" }, "/properties/name/x-svc-type", "must be one of choice, consent, long_text, person, phone, photo, signature, text, yes_no"},
		{"person type on a boolean", func(m map[string]any) { prop(m, "car")["x-svc-type"] = "person" }, "/properties/car/x-svc-type", "person questions must have type string"},
		{"yes_no on a string", func(m map[string]any) { prop(m, "name")["x-svc-type"] = "yes_no" }, "/properties/name/x-svc-type", "yes_no questions must have type boolean"},
		{"person question asked of the visitor", func(m map[string]any) { prop(m, "host")["x-svc-visitor"] = true }, "/properties/host/x-svc-visitor", "visitors cannot look people up"},
		{"person question with a pattern", func(m map[string]any) { prop(m, "host")["pattern"] = "^person_" }, "/properties/host/pattern", "does not apply to a person question"},
		{"phone question with a format", func(m map[string]any) { prop(m, "phone")["format"] = "email" }, "/properties/phone/format", "does not apply to a phone question"},
		{"choice without enum", func(m map[string]any) { delete(prop(m, "size"), "enum"); delete(prop(m, "size"), "x-svc-labels") }, "/properties/size/enum", "required for a choice question"},
		{"consent without text", func(m map[string]any) { delete(prop(m, "agree"), "x-svc-consent-text") }, "/properties/agree/x-svc-consent-text", "required for a consent question"},
		{"x-svc-visitor a string", func(m map[string]any) { prop(m, "name")["x-svc-visitor"] = "yes" }, "/properties/name/x-svc-visitor", "true or false"},
		{"x-svc-sensitive a number", func(m map[string]any) { prop(m, "name")["x-svc-sensitive"] = 1 }, "/properties/name/x-svc-sensitive", "true or false"},
		{"x-svc-masked null", func(m map[string]any) { prop(m, "name")["x-svc-masked"] = nil }, "/properties/name/x-svc-masked", "true or false"},
		{"labels for a value not in the enum", func(m map[string]any) { prop(m, "size")["x-svc-labels"] = map[string]any{"xl": "Huge"} }, "/properties/size/x-svc-labels/xl", "not one of the enum's values"},
		{"labels without enum", func(m map[string]any) { prop(m, "name")["x-svc-labels"] = map[string]any{"a": "A"} }, "/properties/name/x-svc-labels", "needs an enum"},
		{"labels of a boolean naming a string", func(m map[string]any) { prop(m, "car")["x-svc-labels"] = map[string]any{"yes": "Yes"} }, "/properties/car/x-svc-labels/yes", "does not name a value"},
		{"labels naming one integer twice", func(m map[string]any) {
			prop(m, "floor")["x-svc-labels"] = map[string]any{"1": "Ground", "1.0": "Also ground"}
		}, "/properties/floor/x-svc-labels/1.0", "labels the same value as 1"},
		{"label not a string", func(m map[string]any) { prop(m, "size")["x-svc-labels"] = map[string]any{"s": 1} }, "/properties/size/x-svc-labels/s", "must be a string"},
		{"sites empty", func(m map[string]any) { prop(m, "badge")["x-svc-sites"] = []any{} }, "/properties/badge/x-svc-sites", "at least one site"},
		{"sites with a gate ID", func(m map[string]any) {
			prop(m, "badge")["x-svc-sites"] = []any{siteA, "gate_01h2xcejqtf2nbrexx3vqjhp41"}
		}, "/properties/badge/x-svc-sites/1", "must be a site ID"},
		{"sites repeating a site", func(m map[string]any) { prop(m, "badge")["x-svc-sites"] = []any{siteA, siteA} }, "/properties/badge/x-svc-sites/1", "repeats"},

		{"show-if naming an unknown question", func(m map[string]any) {
			prop(m, "plate_colour")["x-svc-show-if"] = map[string]any{"field": "bike", "equals": true}
		}, "/properties/plate_colour/x-svc-show-if/field", "names no question"},
		{"show-if naming a later question", func(m map[string]any) {
			prop(m, "name")["x-svc-show-if"] = map[string]any{"field": "car", "equals": true}
		}, "/properties/name/x-svc-show-if/field", "earlier in x-svc-order"},
		{"show-if naming itself", func(m map[string]any) {
			prop(m, "car")["x-svc-show-if"] = map[string]any{"field": "car", "equals": true}
		}, "/properties/car/x-svc-show-if/field", "earlier in x-svc-order"},
		{"show-if with a value of another type", func(m map[string]any) {
			prop(m, "plate_colour")["x-svc-show-if"] = map[string]any{"field": "car", "equals": "yes"}
		}, "/properties/plate_colour/x-svc-show-if/equals", "must be true or false"},
		{"show-if with a value outside the enum", func(m map[string]any) {
			prop(m, "plate_colour")["x-svc-show-if"] = map[string]any{"field": "size", "equals": "xl"}
		}, "/properties/plate_colour/x-svc-show-if/equals", "not one of the values of size"},
		{"show-if without equals", func(m map[string]any) { prop(m, "plate_colour")["x-svc-show-if"] = map[string]any{"field": "car"} }, "/properties/plate_colour/x-svc-show-if/equals", "required"},
		{"show-if with another member", func(m map[string]any) {
			prop(m, "plate_colour")["x-svc-show-if"] = map[string]any{"field": "car", "equals": true, "not": true}
		}, "/properties/plate_colour/x-svc-show-if/not", "only field and equals"},
		{"visitor question shown by a staff answer", func(m map[string]any) {
			prop(m, "plate_colour")["x-svc-show-if"] = map[string]any{"field": "notes", "equals": "x"}
		}, "/properties/plate_colour/x-svc-show-if/field", "must name a visitor question"},

		{"allOf not an array", func(m map[string]any) { m["allOf"] = map[string]any{} }, "/allOf", "must be an array"},
		{"allOf then naming an unknown key", func(m map[string]any) {
			rule(m, 0)["then"] = map[string]any{"required": []any{"plate_colour", "bike"}}
		}, "/allOf/0/then/required/1", "names no question"},
		{"allOf then empty", func(m map[string]any) { rule(m, 0)["then"] = map[string]any{"required": []any{}} }, "/allOf/0/then/required", "at least one"},
		{"allOf then with properties", func(m map[string]any) {
			rule(m, 0)["then"].(map[string]any)["properties"] = map[string]any{}
		}, "/allOf/0/then/properties", "not supported here"},
		{"allOf if naming an unknown key", func(m map[string]any) {
			rule(m, 1)["if"] = map[string]any{"properties": map[string]any{"bike": map[string]any{"const": true}}, "required": []any{"bike"}}
		}, "/allOf/1/if/properties/bike", "names no question"},
		{"allOf if without required", func(m map[string]any) { delete(rule(m, 0)["if"].(map[string]any), "required") }, "/allOf/0/if/required", "is required"},
		{"allOf if requiring another key", func(m map[string]any) { rule(m, 0)["if"].(map[string]any)["required"] = []any{"name"} }, "/allOf/0/if/required", "exactly the keys of if/properties"},
		{"allOf const of another type", func(m map[string]any) {
			rule(m, 1)["if"].(map[string]any)["properties"] = map[string]any{"count": map[string]any{"const": "2"}}
		}, "/allOf/1/if/properties/count/const", "must be an integer"},
		{"allOf if with enum instead of const", func(m map[string]any) {
			rule(m, 1)["if"].(map[string]any)["properties"] = map[string]any{"count": map[string]any{"enum": []any{2}}}
		}, "/allOf/1/if/properties/count/enum", "not supported here"},
		{"allOf with else", func(m map[string]any) { rule(m, 0)["else"] = map[string]any{"required": []any{"name"}} }, "/allOf/0/else", "not supported here"},
		{"allOf item without then", func(m map[string]any) { delete(rule(m, 0), "then") }, "/allOf/0/then", "is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := kitchenSinkTree(t)
			c.change(m)
			f, err := form.Parse(mustMarshal(t, m))
			assertSchemaError(t, err, c.pointer, c.message)
			assert.Nil(t, f)
		})
	}
}

// renameQuestion renames a question in properties and x-svc-order.
func renameQuestion(m map[string]any, from, to string) {
	props := m["properties"].(map[string]any)
	props[to] = props[from]
	delete(props, from)
	for i, k := range m["x-svc-order"].([]any) {
		if k == from {
			m["x-svc-order"].([]any)[i] = to
		}
	}
	m["required"] = []any{}
	m["allOf"] = []any{}
}

func assertSchemaError(t *testing.T, err error, pointer, message string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, form.ErrInvalidSchema)
	var se *form.SchemaError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, pointer, se.Pointer, "message: %s", se.Message)
	assert.Contains(t, se.Message, message)
	assert.Contains(t, err.Error(), fmt.Sprintf("%q", pointer))
}

func TestParse_RejectsDocuments(t *testing.T) {
	cases := []struct {
		name    string
		schema  string
		pointer string
		message string
	}{
		{"empty", ``, "", "ends too soon"},
		{"not JSON", `{"type":`, "/type", "ends too soon"},
		{"a bad token", `{"type":"object","properties":{},"x-svc-order":[],"title":tru}`, "/title", "not valid JSON"},
		{"an array", `[]`, "", "must be a JSON object"},
		{"a string", `"object"`, "", "must be a JSON object"},
		{"trailing data", `{"type":"object","properties":{},"x-svc-order":[]} {}`, "", "more after the JSON value"},
		{"invalid UTF-8", "{\"type\":\"object\",\"title\":\"\xff\",\"properties\":{},\"x-svc-order\":[]}", "", "UTF-8"},
		{"duplicate key at the top", `{"type":"object","type":"object","properties":{},"x-svc-order":[]}`, "/type", "repeats a key"},
		{"duplicate question", `{"type":"object","properties":{"a":{"type":"string"},"a":{"type":"integer"}},"x-svc-order":["a"]}`, "/properties/a", "repeats a key"},
		{"NUL in a title", `{"type":"object","title":"a\u0000b","properties":{},"x-svc-order":[]}`, "/title", "NUL"},
		{"NUL in a key", `{"type":"object","properties":{},"x-svc-order":[],"a\u0000":1}`, "/a\x00", "NUL"},
		{"deep nesting", `{"type":"object","properties":{},"x-svc-order":[],"title":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, "/title/0/0/0/0/0/0/0/0/0/0/0/0", "nests deeper"},
		{"missing key escaped in the pointer", `{"type":"object","properties":{},"x-svc-order":[],"a~b":1}`, "/a~0b", "not a keyword"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := form.Parse([]byte(c.schema))
			assertSchemaError(t, err, c.pointer, c.message)
		})
	}
}

func TestParse_SchemaIsCanonical(t *testing.T) {
	a := mustParse(t, []byte(`{ "x-svc-order": ["b", "a"], "type": "object",
		"properties": {"b": {"type": "number", "maximum": 1.50}, "a": {"type": "string", "title": "<a> & \u00e9"}}}`))
	assert.Equal(t, `{"properties":{"a":{"title":"<a> & é","type":"string"},"b":{"maximum":1.50,"type":"number"}},"type":"object","x-svc-order":["b","a"]}`,
		string(a.Schema()))
	assert.Equal(t, []string{"b", "a"}, a.Keys())
	b := mustParse(t, a.Schema())
	assert.Equal(t, a.Schema(), b.Schema())
	s := a.Schema()
	s[0] = 'X'
	assert.Equal(t, byte('{'), a.Schema()[0], "Schema returns a copy")
}

func TestParse_ErrorIsNotSchemaErrorForValidInput(t *testing.T) {
	_, err := form.Parse(kitchenSinkJSON())
	assert.False(t, errors.Is(err, form.ErrInvalidSchema))
}
