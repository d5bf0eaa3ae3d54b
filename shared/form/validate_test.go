package form_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/form"
)

// TestValidate_OneAnswer checks each rule on one answer to the kitchen-sink
// form: either the problem (exact message) or the normalised answer.
func TestValidate_OneAnswer(t *testing.T) {
	f := mustParse(t, kitchenSinkJSON())
	staff := form.Options{SiteID: siteA}
	cases := []struct {
		name    string
		key     string
		answer  string
		opts    form.Options
		message string // the expected problem; "" when accepted
		stored  string // the expected normalised answer when accepted; "" when dropped
	}{
		{"unknown key", "nope", `"x"`, staff, "is not a question of this form", ""},
		{"unknown key with null", "nope", `null`, staff, "is not a question of this form", ""},
		{"staff question, publishable key", "notes", `"x"`, form.Options{Public: true, SiteID: siteA}, "is not in this visit type's public form", ""},
		{"staff question, publishable key, null", "notes", `null`, form.Options{Public: true}, "is not in this visit type's public form", ""},
		{"unknown key, publishable key: same words", "nope", `"x"`, form.Options{Public: true}, "is not in this visit type's public form", ""},
		{"visitor question, publishable key", "name", `"Ada"`, form.Options{Public: true}, "", `"Ada"`},
		{"visitor question, staff", "name", `"Ada"`, staff, "", `"Ada"`},

		{"site-limited question at its site", "badge", `"B1"`, form.Options{SiteID: siteA}, "", `"B1"`},
		{"site-limited question at another site", "badge", `"B1"`, form.Options{SiteID: siteB}, "is not asked at this site", ""},
		{"site-limited question without a site", "badge", `"B1"`, form.Options{}, "is not asked at this site", ""},
		{"site-limited question at another site, null", "badge", `null`, form.Options{SiteID: siteB}, "", ""},

		{"null", "name", `null`, staff, "", ""},
		{"empty raw is null", "name", ``, staff, "", ""},
		{"two values", "name", `"a" "b"`, staff, "must be a single JSON value", ""},
		{"not JSON", "name", `{`, staff, "must be a single JSON value", ""},

		{"number to string", "name", `12`, staff, "must be a string", ""},
		{"boolean to string", "name", `true`, staff, "must be a string", ""},
		{"object to string", "name", `{"a":1}`, staff, "must be a string", ""},
		{"array to string", "name", `["Ada"]`, staff, "must be a string", ""},
		{"string to integer", "count", `"3"`, staff, "must be an integer", ""},
		{"boolean to integer", "count", `true`, staff, "must be an integer", ""},
		{"fraction to integer", "count", `1.5`, staff, "must be a whole number", ""},
		{"tiny fraction to integer", "guests", `1.0000000000000000001`, staff, "must be a whole number", ""},
		{"negative exponent to integer", "guests", `15e-1`, staff, "must be a whole number", ""},
		{"string to boolean", "car", `"true"`, staff, "must be true or false", ""},
		{"number to boolean", "car", `1`, staff, "must be true or false", ""},
		{"string to number", "weight", `"2"`, staff, "must be a number", ""},

		{"integer", "count", `3`, staff, "", `3`},
		{"integer written with a point", "count", `2.0`, staff, "", `2`},
		{"integer written with an exponent", "guests", `1.5e3`, staff, "", `1500`},
		{"negative integer", "guests", `-12`, staff, "", `-12`},
		{"zero with an exponent", "guests", `0e999999999999`, staff, "", `0`},
		{"largest integer", "guests", `9007199254740991`, staff, "", `9007199254740991`},
		{"integer beyond 2^53", "guests", `9007199254740992`, staff, "must be between -9007199254740991 and 9007199254740991", ""},
		{"integer with a huge exponent", "guests", `1e999999999999`, staff, "must be between -9007199254740991 and 9007199254740991", ""},
		{"integer below minimum", "count", `0`, staff, "must be at least 1", ""},
		{"integer above maximum", "count", `11`, staff, "must be at most 10", ""},
		{"number kept as sent", "weight", `1.50`, staff, "", `1.50`},
		{"number at minimum", "weight", `0.5`, staff, "", `0.5`},
		{"number below minimum", "weight", `0.49`, staff, "must be at least 0.5", ""},
		{"number above maximum", "weight", `1e2`, staff, "must be at most 99.5", ""},
		{"number beyond float64", "weight", `1e400`, staff, "is too large to be a number", ""},

		{"integer in enum", "floor", `2`, staff, "", `2`},
		{"integer in enum written otherwise", "floor", `3.0`, staff, "", `3`},
		{"integer not in enum", "floor", `4`, staff, "must be one of 1, 2, 3", ""},
		{"string in enum", "size", `"m"`, staff, "", `"m"`},
		{"string not in enum", "size", `"xl"`, staff, "must be one of s, m, l", ""},
		{"enum is case-sensitive", "size", `"M"`, staff, "must be one of s, m, l", ""},

		{"maxLength in characters, not bytes", "name", `"日本語です"`, staff, "", `"日本語です"`},
		{"maxLength with accents", "name", `"Zoë é"`, staff, "", `"Zoë é"`},
		{"too long by one character", "name", `"Zoë éa"`, staff, "must be at most 5 characters", ""},
		{"too short", "name", `"A"`, staff, "must be at least 2 characters", ""},
		{"default maxLength", "notes", `"` + strings.Repeat("é", 2000) + `"`, staff, "", `"` + strings.Repeat("é", 2000) + `"`},
		{"default maxLength exceeded", "notes", `"` + strings.Repeat("é", 2001) + `"`, staff, "must be at most 2000 characters", ""},
		{"empty string", "notes", `""`, staff, "may not be empty: send null for no answer", ""},
		{"NUL", "notes", `"a\u0000b"`, staff, "may not contain the NUL character (U+0000)", ""},
		{"escapes normalised", "notes", ` "\u00e9 <b> & \/" `, staff, "", `"é <b> & /"`},

		{"pattern matched", "code", `"ABC"`, staff, "", `"ABC"`},
		{"pattern not matched", "code", `"ABCD"`, staff, "must match the pattern ^[A-Z]{3}$", ""},

		{"email", "email", `"ada@example.com"`, staff, "", `"ada@example.com"`},
		{"email with a name", "email", `"Ada <ada@example.com>"`, staff, "must be an email address such as ada@example.com", ""},
		{"email without a domain", "email", `"ada"`, staff, "must be an email address such as ada@example.com", ""},
		{"date", "day", `"2026-11-21"`, staff, "", `"2026-11-21"`},
		{"date that does not exist", "day", `"2026-02-30"`, staff, "must be a date such as 2026-11-21", ""},
		{"date with a time", "day", `"2026-11-21T09:00:00Z"`, staff, "must be a date such as 2026-11-21", ""},
		{"date with one-digit month", "day", `"2026-1-21"`, staff, "must be a date such as 2026-11-21", ""},
		{"date-time", "at", `"2026-11-21T09:00:00Z"`, staff, "", `"2026-11-21T09:00:00Z"`},
		{"date-time with an offset and fraction", "at", `"2026-11-21T09:00:00.123+01:00"`, staff, "", `"2026-11-21T09:00:00.123+01:00"`},
		{"date-time without an offset", "at", `"2026-11-21T09:00:00"`, staff, "must be an RFC 3339 date-time such as 2026-11-21T09:00:00Z", ""},
		{"date-time with a space", "at", `"2026-11-21 09:00:00Z"`, staff, "must be an RFC 3339 date-time such as 2026-11-21T09:00:00Z", ""},
		{"uri", "link", `"https://example.com/a?b=c#d"`, staff, "", `"https://example.com/a?b=c#d"`},
		{"uri over http", "link", `"http://example.com"`, staff, "", `"http://example.com"`},
		{"uri without a scheme", "link", `"example.com/a"`, staff, "must be an http or https URL such as https://example.com/", ""},
		{"javascript uri", "link", `"javascript:alert(1)"`, staff, "must be an http or https URL such as https://example.com/", ""},
		{"ftp uri", "link", `"ftp://example.com/a"`, staff, "must be an http or https URL such as https://example.com/", ""},
		{"uri with user information", "link", `"https://bank.example@evil.example/"`, staff, "must be an http or https URL such as https://example.com/", ""},
		{"uri with a space", "link", `"https://example.com/a b"`, staff, "must be an http or https URL such as https://example.com/", ""},
		{"phone", "phone", `"+442071838750"`, staff, "", `"+442071838750"`},
		{"phone not E.164", "phone", `"020 7183 8750"`, staff, "must be an E.164 number such as +442071838750", ""},

		{"person", "host", `"` + person + `"`, staff, "", `"` + person + `"`},
		{"person question given a team ID", "host", `"team_01h2xcejqtf2nbrexx3vqjhp41"`, staff, "must be a person ID (person_ followed by 26 characters)", ""},
		{"person question given a name", "host", `"Ada"`, staff, "must be a person ID (person_ followed by 26 characters)", ""},
		{"person ID in upper case", "host", `"` + strings.ToUpper(person) + `"`, staff, "must be a person ID (person_ followed by 26 characters)", ""},

		{"boolean", "car", `false`, staff, "", `false`},
		{"hidden by show-if, still accepted", "plate_colour", `"red"`, staff, "", `"red"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errs := f.Validate(map[string]json.RawMessage{c.key: raw(c.answer)}, c.opts)
			if c.message != "" {
				assert.Equal(t, []form.FieldError{{Field: c.key, Message: c.message}}, errs)
				assert.Nil(t, out)
				return
			}
			require.Empty(t, errs)
			if c.stored == "" {
				assert.Equal(t, map[string]json.RawMessage{}, out, "null is dropped")
				return
			}
			assert.Equal(t, map[string]json.RawMessage{c.key: raw(c.stored)}, out)
		})
	}
}

func TestValidate_RequiredNotEnforced(t *testing.T) {
	f := mustParse(t, kitchenSinkJSON())
	for name, answers := range map[string]map[string]json.RawMessage{
		"nil":   nil,
		"empty": {},
		// car=true makes plate_colour and doc required by allOf; the
		// top-level required name and host are missing too.
		"if satisfied, then missing": {"car": raw(`true`)},
		"all null":                   {"name": raw(`null`), "host": raw(`null`), "car": raw(`null`)},
	} {
		t.Run(name, func(t *testing.T) {
			out, errs := f.Validate(answers, form.Options{SiteID: siteA})
			assert.Empty(t, errs)
			assert.NotNil(t, out, "an empty map, stored as {}")
			for k := range out {
				assert.NotEqual(t, "null", string(out[k]))
			}
		})
	}
}

func TestValidate_EveryProblemSortedByKey(t *testing.T) {
	f := mustParse(t, kitchenSinkJSON())
	out, errs := f.Validate(map[string]json.RawMessage{
		"zzz":   raw(`1`),
		"name":  raw(`5`),
		"count": raw(`"x"`),
		"agree": raw(`"yes"`),
		"code":  raw(`"ABC"`), // fine
		"badge": raw(`"B1"`),
		"size":  raw(`null`),
	}, form.Options{SiteID: siteB})
	assert.Nil(t, out, "nothing to store while there is a problem")
	assert.Equal(t, []form.FieldError{
		{Field: "agree", Message: "must be true or false"},
		{Field: "badge", Message: "is not asked at this site"},
		{Field: "count", Message: "must be an integer"},
		{Field: "name", Message: "must be a string"},
		{Field: "zzz", Message: "is not a question of this form"},
	}, errs)
}

func TestValidate_PublicForm(t *testing.T) {
	f := mustParse(t, kitchenSinkJSON())
	in := map[string]json.RawMessage{
		"name":   raw(`"Ada"`),
		"secret": raw(`"s"`), // sensitive, but asked of the visitor
		"doc":    raw(`"d"`), // staff only
		"host":   raw(`"` + person + `"`),
		"ghost":  raw(`"g"`),
	}
	_, errs := f.Validate(in, form.Options{Public: true, SiteID: siteA})
	assert.Equal(t, []form.FieldError{
		{Field: "doc", Message: "is not in this visit type's public form"},
		{Field: "ghost", Message: "is not in this visit type's public form"},
		{Field: "host", Message: "is not in this visit type's public form"},
	}, errs)

	delete(in, "doc")
	delete(in, "ghost")
	delete(in, "host")
	out, errs := f.Validate(in, form.Options{Public: true, SiteID: siteA})
	assert.Empty(t, errs)
	assert.Equal(t, map[string]json.RawMessage{"name": raw(`"Ada"`), "secret": raw(`"s"`)}, out)
}

func TestValidate_MoreThanTenChoices(t *testing.T) {
	f := mustParse(t, []byte(`{"type":"object","properties":{"n":{"type":"integer","enum":[1,2,3,4,5,6,7,8,9,10,11]}},"x-svc-order":["n"]}`))
	_, errs := f.Validate(map[string]json.RawMessage{"n": raw(`12`)}, form.Options{})
	assert.Equal(t, []form.FieldError{{Field: "n", Message: "must be one of the choices the form lists"}}, errs)
}

func TestValidate_DoesNotChangeItsInput(t *testing.T) {
	f := mustParse(t, kitchenSinkJSON())
	in := map[string]json.RawMessage{"count": raw(`2.0`), "name": raw(`null`)}
	out, errs := f.Validate(in, form.Options{})
	require.Empty(t, errs)
	assert.Equal(t, map[string]json.RawMessage{"count": raw(`2.0`), "name": raw(`null`)}, in)
	assert.Equal(t, map[string]json.RawMessage{"count": raw(`2`)}, out)
}
