package form_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/form"
)

func answers(pairs ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i < len(pairs); i += 2 {
		m[pairs[i]] = raw(pairs[i+1])
	}
	return m
}

func question(t *testing.T, f *form.Form, k string) form.Question {
	t.Helper()
	q, ok := f.Question(k)
	require.True(t, ok, k)
	return q
}

// TestQuestions_EveryAnnotation reads each annotation and keyword of the
// kitchen sink back through Question.
func TestQuestions_EveryAnnotation(t *testing.T) {
	f := mustParse(t, kitchenSinkJSON())
	carTrue := []form.Condition{{Key: "car", Value: raw(`true`)}}

	name := question(t, f, "name")
	assert.Equal(t, form.Question{
		Key: "name", Type: "string", XType: "text", Title: "Name", Description: "Yours.",
		MinLength: 2, MaxLength: 5, Required: true, Visitor: true,
		RequiredWhen: [][]form.Condition{{{Key: "weight", Value: raw(`1.5`)}}},
	}, name)

	assert.Equal(t, "^[A-Z]{3}$", question(t, f, "code").Pattern)
	assert.Equal(t, [][]form.Condition{{{Key: "car", Value: raw(`false`)}, {Key: "size", Value: raw(`"l"`)}}},
		question(t, f, "code").RequiredWhen, "a compound if: every condition, in key order")
	assert.Equal(t, "email", question(t, f, "email").Format)
	assert.Equal(t, form.DefaultMaxLength, question(t, f, "email").MaxLength)
	assert.Equal(t, "phone", question(t, f, "phone").XType)
	assert.Equal(t, "long_text", question(t, f, "notes").XType)

	size := question(t, f, "size")
	assert.Equal(t, "choice", size.XType)
	assert.Equal(t, []form.Choice{
		{Value: raw(`"s"`), Text: "s", Label: "Small"},
		{Value: raw(`"m"`), Text: "m"},
		{Value: raw(`"l"`), Text: "l", Label: "Large"},
	}, size.Choices)

	count := question(t, f, "count")
	assert.Equal(t, "people", count.Unit)
	assert.Equal(t, "1", count.Minimum)
	assert.Equal(t, "10", count.Maximum)
	assert.Empty(t, count.XType, "an integer without an enum has no x-svc-type")
	assert.Zero(t, count.MaxLength, "lengths are for strings")

	floor := question(t, f, "floor")
	assert.Equal(t, "choice", floor.XType, "an enum without x-svc-type is a choice")
	assert.Equal(t, []form.Choice{
		{Value: raw(`1`), Text: "1", Label: "Ground"}, {Value: raw(`2`), Text: "2"}, {Value: raw(`3`), Text: "3", Label: "Top"},
	}, floor.Choices)

	weight := question(t, f, "weight")
	assert.Equal(t, []string{"0.5", "99.5", "kg"}, []string{weight.Minimum, weight.Maximum, weight.Unit})

	agree := question(t, f, "agree")
	assert.Equal(t, "consent", agree.XType)
	assert.Equal(t, "I agree.", agree.ConsentText)

	host := question(t, f, "host")
	assert.Equal(t, "person", host.XType)
	assert.True(t, host.Required)
	assert.Equal(t, [][]form.Condition{{{Key: "count", Value: raw(`2`)}}}, host.RequiredWhen)

	assert.Equal(t, []string{siteA}, question(t, f, "badge").Sites)
	assert.Nil(t, name.Sites)
	assert.Equal(t, "signature", question(t, f, "signature").XType)
	assert.Equal(t, "photo", question(t, f, "photo").XType)
	assert.True(t, question(t, f, "secret").Sensitive)
	doc := question(t, f, "doc")
	assert.True(t, doc.Masked)
	assert.False(t, doc.Visitor)
	assert.Equal(t, [][]form.Condition{carTrue}, doc.RequiredWhen)

	car := question(t, f, "car")
	assert.Equal(t, "yes_no", car.XType)
	assert.Equal(t, []form.Choice{{Value: raw(`true`), Text: "true", Label: "Yes"}, {Value: raw(`false`), Text: "false"}}, car.Choices,
		"a boolean offers true and false, labelled where x-svc-labels says")

	plate := question(t, f, "plate_colour")
	assert.Equal(t, &form.Condition{Key: "car", Value: raw(`true`)}, plate.ShowIf)
	assert.Equal(t, [][]form.Condition{carTrue}, plate.RequiredWhen)

	van := question(t, f, "van")
	assert.Equal(t, "yes_no", van.XType, "a boolean without x-svc-type is a yes/no question")
	assert.Equal(t, &form.Condition{Key: "car", Value: raw(`false`)}, van.ShowIf)

	_, ok := f.Question("nope")
	assert.False(t, ok)
}

func TestQuestions_InScreenOrderAndCopied(t *testing.T) {
	f := mustParse(t, kitchenSinkJSON())
	qs := f.Questions()
	keys := make([]string, len(qs))
	for i, q := range qs {
		keys[i] = q.Key
	}
	assert.Equal(t, f.Keys(), keys)

	badge := question(t, f, "badge")
	badge.Sites[0] = "changed"
	badge.Choices = nil
	assert.Equal(t, []string{siteA}, question(t, f, "badge").Sites, "the form is immutable")
}

func TestQuestions_NumberLabels(t *testing.T) {
	// x-svc-labels are keyed by the value's JSON text; 2.0 names the
	// integer 2, and the label follows the value, not its spelling.
	f := mustParse(t, []byte(`{"type":"object","properties":{"n":{"type":"integer","enum":[1,2],"x-svc-labels":{"2.0":"Two"}}},"x-svc-order":["n"]}`))
	assert.Equal(t, []form.Choice{{Value: raw(`1`), Text: "1"}, {Value: raw(`2`), Text: "2", Label: "Two"}}, question(t, f, "n").Choices)
}

// chain is a form whose conditions hang on each other: b shows when a is
// yes, c when b is x, and d is required when b is x.
const chain = `{"type":"object","properties":{
  "a":{"type":"boolean"},
  "b":{"type":"string","enum":["x","y"],"x-svc-show-if":{"field":"a","equals":true}},
  "c":{"type":"string","x-svc-show-if":{"field":"b","equals":"x"}},
  "d":{"type":"integer","minimum":1},
  "e":{"type":"boolean","x-svc-type":"consent","x-svc-consent-text":"Agreed.","x-svc-show-if":{"field":"d","equals":3}}},
  "required":["e"],
  "allOf":[{"if":{"properties":{"b":{"const":"x"}},"required":["b"]},"then":{"required":["c","d"]}}],
  "x-svc-order":["a","b","c","d","e"]}`

func TestVisible(t *testing.T) {
	sink := mustParse(t, kitchenSinkJSON())
	all := []string{"name", "code", "email", "day", "at", "link", "phone", "notes", "size", "count", "guests", "floor",
		"weight", "agree", "host", "badge", "signature", "photo", "secret", "doc", "car"}
	without := func(keys []string, drop string) []string {
		var out []string
		for _, k := range keys {
			if k != drop {
				out = append(out, k)
			}
		}
		return out
	}
	ch := mustParse(t, []byte(chain))
	cases := []struct {
		name    string
		f       *form.Form
		answers map[string]json.RawMessage
		site    string
		want    []string
	}{
		{"nothing answered", sink, nil, siteA, all},
		{"x-svc-sites: another site", sink, nil, siteB, without(all, "badge")},
		{"x-svc-sites: no site", sink, nil, "", without(all, "badge")},
		{"show-if true", sink, answers("car", `true`), siteA, append(all[:len(all):len(all)], "plate_colour")},
		{"show-if false", sink, answers("car", `false`), siteA, append(all[:len(all):len(all)], "van")},
		{"show-if: null is no answer", sink, answers("car", `null`), siteA, all},
		{"show-if: a string is not a boolean", sink, answers("car", `"true"`), siteA, all},
		{"show-if: broken JSON equals nothing", sink, answers("car", `tru`), siteA, all},
		{"chain: first step", ch, answers("a", `true`), "", []string{"a", "b", "d"}},
		{"chain: both steps", ch, answers("a", `true`, "b", `"x"`), "", []string{"a", "b", "c", "d"}},
		{"chain: other value", ch, answers("a", `true`, "b", `"y"`), "", []string{"a", "b", "d"}},
		{"chain: hiding a hides what hangs on it", ch, answers("a", `false`, "b", `"x"`, "c", `"stale"`), "", []string{"a", "d"}},
		{"show-if on a number, spelled otherwise", ch, answers("d", `3.0`), "", []string{"a", "d", "e"}},
		{"show-if on a number out of bounds", ch, answers("d", `0`), "", []string{"a", "d"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.f.Visible(c.answers, c.site))
		})
	}
}

func TestMissing(t *testing.T) {
	sink := mustParse(t, kitchenSinkJSON())
	ch := mustParse(t, []byte(chain))
	req := func(keys ...string) []form.FieldError {
		var out []form.FieldError
		for _, k := range keys {
			out = append(out, form.FieldError{Field: k, Message: form.MessageRequired})
		}
		return out
	}
	named := answers("name", `"Ada"`, "host", `"`+person+`"`)
	with := func(base map[string]json.RawMessage, pairs ...string) map[string]json.RawMessage {
		m := answers(pairs...)
		for k, v := range base {
			if _, ok := m[k]; !ok {
				m[k] = v
			}
		}
		return m
	}
	cases := []struct {
		name    string
		f       *form.Form
		answers map[string]json.RawMessage
		site    string
		want    []form.FieldError
	}{
		{"top-level required", sink, nil, siteA, req("car", "host", "name")},
		{"null is no answer", sink, answers("name", `null`, "host", `null`, "car", `null`), siteA, req("car", "host", "name")},
		{"an invalid answer is an answer (Validate's to judge)", sink, answers("name", `5`, "host", `"x"`, "car", `"yes"`), siteA, nil},
		{"allOf then, with show-if", sink, with(named, "car", `true`), siteA, req("doc", "plate_colour")},
		{"allOf then answered", sink, with(named, "car", `true`, "doc", `"D1"`, "plate_colour", `"red"`), siteA, nil},
		{"allOf then not triggered", sink, with(named, "car", `false`), siteA, nil},
		{"compound if: every condition", sink, with(named, "car", `false`, "size", `"l"`), siteA, req("code")},
		{"compound if: one condition is not enough", sink, with(named, "car", `true`, "size", `"l"`, "doc", `"D"`, "plate_colour", `"red"`), siteA, nil},
		{"if on a number", sink, with(named, "car", `false`, "name", `null`, "weight", `1.50`), siteA, req("name")},
		{"a required question hidden by show-if is not asked", ch, answers("a", `false`), "", nil},
		{"chain: then of a shown condition", ch, answers("a", `true`, "b", `"x"`), "", req("c", "d")},
		{"chain: a hidden question's stale answer requires nothing", ch, answers("a", `false`, "b", `"x"`), "", nil},
		{"required consent absent", ch, answers("d", `3`), "", []form.FieldError{{Field: "e", Message: form.MessageNotAccepted}}},
		{"required consent refused", ch, answers("d", `3`, "e", `false`), "", []form.FieldError{{Field: "e", Message: form.MessageNotAccepted}}},
		{"required consent accepted", ch, answers("d", `3`, "e", `true`), "", nil},
		{"required consent, not a boolean: Validate's to judge", ch, answers("d", `3`, "e", `"yes"`), "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, c.f.Missing(c.answers, c.site))
		})
	}

	photo := mustParse(t, []byte(`{"type":"object","properties":{"p":{"type":"string","x-svc-type":"photo"}},"required":["p"],"x-svc-order":["p"]}`))
	assert.Empty(t, photo.Missing(nil, ""), "the desk cannot take a photo")

	// x-svc-sites: a required question asked only at another site is not
	// missing there.
	site := mustParse(t, []byte(strings.ReplaceAll(`{"type":"object","properties":{"b":{"type":"string","x-svc-sites":["SITE_A"]}},"required":["b"],"x-svc-order":["b"]}`, "SITE_A", siteA)))
	assert.Equal(t, req("b"), site.Missing(nil, siteA))
	assert.Empty(t, site.Missing(nil, siteB))
}

func TestValidateAtDesk(t *testing.T) {
	ch := mustParse(t, []byte(chain))

	out, errs := ch.ValidateAtDesk(answers("a", `false`, "b", `"x"`, "c", `"stale"`, "d", `2.0`), "")
	assert.Empty(t, errs, "hidden questions' answers are dropped, not refused")
	assert.Equal(t, answers("a", `false`, "d", `2`), out, "normalised as Validate does")

	out, errs = ch.ValidateAtDesk(answers("a", `true`, "b", `"x"`, "d", `0`, "zzz", `1`), "")
	assert.Nil(t, out)
	assert.Equal(t, []form.FieldError{
		{Field: "c", Message: form.MessageRequired},
		{Field: "d", Message: "must be at least 1"},
		{Field: "zzz", Message: "is not a question of this form"},
	}, errs, "the API's messages and the desk's required, sorted by key")

	out, errs = ch.ValidateAtDesk(nil, "")
	assert.Empty(t, errs)
	assert.Equal(t, map[string]json.RawMessage{}, out)

	sink := mustParse(t, kitchenSinkJSON())
	_, errs = sink.ValidateAtDesk(answers("badge", `"B1"`, "name", `"Ada"`, "host", `"`+person+`"`, "car", `false`), siteB)
	assert.Empty(t, errs, "a question of another site is not shown here, so its answer is dropped")
}

func TestRequired_InScreenOrder(t *testing.T) {
	sink := mustParse(t, kitchenSinkJSON())
	assert.Equal(t, []string{"name", "host", "car"}, sink.Required(nil, siteA))
	assert.Equal(t, []string{"name", "host", "doc", "car", "plate_colour"}, sink.Required(answers("car", `true`, "name", `"Ada"`), siteA),
		"answered or not: Required says what the screen marks")
	ch := mustParse(t, []byte(chain))
	assert.Empty(t, ch.Required(nil, ""), "e is required but hidden")
	assert.Equal(t, []string{"c", "d"}, ch.Required(answers("a", `true`, "b", `"x"`), ""))
}
