package formview_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/svc-vms/svc/kiosk/formview"
	"github.com/svc-vms/svc/shared/form"
)

// complete is the least the desk form accepts at siteA.
var complete = []string{"company", "Acme", "has_car", "false", "rules", "true"}

func with(pairs ...string) []string { return append(append([]string{}, complete...), pairs...) }

func raw(s string) json.RawMessage { return json.RawMessage(s) }

func TestParse_TypedAnswers(t *testing.T) {
	f := deskForm(t)
	res := formview.Parse(f, submitted(f, with(
		"email", " ada@example.com ",
		"phone", "+442071838750",
		"day", "2026-11-21",
		"arrive", "2026-11-21T09:30",
		"notes", "line one\r\nline two",
		"parcels", "3",
		"weight", "1.50",
		"size", "l",
		"floor", "0",
		"host", ada,
		"host.q", "Ada Lovelace",
		"badge", "blue",
		"sig", "Ada Lovelace",
		"photo", "ignored",
	)...), opts())
	require.True(t, res.OK(), "errors %+v unseen %v", res.Errors, res.Unseen)
	assert.Equal(t, map[string]json.RawMessage{
		"company": raw(`"Acme"`),
		"has_car": raw(`false`),
		"rules":   raw(`true`),
		"email":   raw(`"ada@example.com"`),
		"phone":   raw(`"+442071838750"`),
		"day":     raw(`"2026-11-21"`),
		"arrive":  raw(`"2026-11-21T09:30:00+01:00"`),
		"notes":   raw(`"line one\nline two"`),
		"parcels": raw(`3`),
		"weight":  raw(`1.50`),
		"size":    raw(`"l"`),
		"floor":   raw(`0`),
		"host":    raw(`"` + ada + `"`),
		"badge":   raw(`"blue"`),
		"sig":     raw(`"Ada Lovelace"`),
	}, res.Answers, "numbers as numbers, booleans as booleans, person IDs as strings; photo is not asked here")
}

func TestParse_APIMessages(t *testing.T) {
	f := deskForm(t)
	cases := []struct {
		name, key, value, message string
	}{
		{"letters for an integer", "parcels", "three", "must be an integer"},
		{"a fraction for an integer", "parcels", "1.5", "must be a whole number"},
		{"below the minimum", "parcels", "0", "must be at least 1"},
		{"above the maximum", "parcels", "501", "must be at most 500"},
		{"a comma for a number", "weight", "1,5", "must be a number"},
		{"below a number's minimum", "weight", "0.4", "must be at least 0.5"},
		{"not in the enum", "size", "xl", "must be one of s, m, l"},
		{"not a boolean", "has_car", "maybe", "must be true or false"},
		{"not an email", "email", "ada@", "must be an email address such as ada@example.com"},
		{"not a date", "day", "2026-02-30", "must be a date such as 2026-11-21"},
		{"not a date-time", "arrive", "soon", "must be an RFC 3339 date-time such as 2026-11-21T09:00:00Z"},
		{"not E.164", "phone", "020 7183 8750", "must be an E.164 number such as +442071838750"},
		{"too long", "plate", strings.Repeat("x", 11), "must be at most 10 characters"},
		{"NUL", "company", "a\x00b", "may not contain the NUL character (U+0000)"},
		{"a malformed person ID", "host", "person_nope", "must be a person ID (person_ followed by 26 characters)"},
		{"an unknown person", "host", "person_01h2xcejqtf2nbrexx3vqjhp41", "no person with this ID"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := formview.Parse(f, submitted(f, with("has_car", "true", "plate", "AB12", c.key, c.value)...), opts())
			assert.Nil(t, res.Answers)
			assert.Contains(t, res.Errors, form.FieldError{Field: c.key, Message: c.message})

			// The same words as the API's Validate for the same answer,
			// where the API sees a value of the wrong type as sent.
			if c.key != "host" && c.key != "company" {
				var v json.RawMessage
				switch {
				case c.key == "parcels" && c.value != "three", c.key == "weight" && c.value != "1,5":
					v = raw(c.value)
				default:
					b, _ := json.Marshal(c.value)
					v = b
				}
				_, apiErrs := f.Validate(map[string]json.RawMessage{c.key: v}, form.Options{SiteID: siteA})
				assert.Equal(t, []form.FieldError{{Field: c.key, Message: c.message}}, apiErrs)
			}
		})
	}
}

func TestParse_Required(t *testing.T) {
	f := deskForm(t)
	res := formview.Parse(f, submitted(f), opts())
	assert.Equal(t, []form.FieldError{
		{Field: "company", Message: "is required"},
		{Field: "has_car", Message: "is required"},
		{Field: "rules", Message: "must be accepted"},
	}, res.Errors, "a required photo is not asked at the desk, so not missing")
	assert.Nil(t, res.Answers)

	res = formview.Parse(f, submitted(f, "company", "   ", "has_car", "false", "rules", ""), opts())
	assert.Equal(t, []form.FieldError{
		{Field: "company", Message: "is required"},
		{Field: "rules", Message: "must be accepted"},
	}, res.Errors, "blank is no answer; consent must be ticked")

	res = formview.Parse(f, submitted(f, with("has_car", "true")...), opts())
	assert.Equal(t, []form.FieldError{{Field: "plate", Message: "is required"}}, res.Errors, "allOf/if/then")

	res = formview.Parse(f, submitted(f, "company", "Acme", "rules", "true", "has_car", "true", "plate", "AB12", "size", "l"), opts())
	assert.Equal(t, []form.FieldError{
		{Field: "host", Message: "is required"},
		{Field: "parcels", Message: "is required"},
	}, res.Errors, "compound if: both conditions hold")
}

func TestParse_HiddenAnswersDropped(t *testing.T) {
	f := deskForm(t)
	res := formview.Parse(f, submitted(f, with("plate", "AB12", "ev", "true", "charger", "ccs")...), opts())
	require.True(t, res.OK(), "errors %+v unseen %v", res.Errors, res.Unseen)
	assert.NotContains(t, res.Answers, "plate", "has_car is no: the plate is not asked, nor kept")
	assert.NotContains(t, res.Answers, "ev")
	assert.NotContains(t, res.Answers, "charger")

	o := opts()
	o.SiteID = siteB
	res = formview.Parse(f, submitted(f, with("badge", "blue")...), o)
	require.True(t, res.OK(), "errors %+v unseen %v", res.Errors, res.Unseen)
	assert.NotContains(t, res.Answers, "badge", "x-svc-sites: another site's question is not kept")

	res = formview.Parse(f, submitted(f, with("zzz", "1", "name", "page's own field")...), opts())
	assert.True(t, res.OK(), "values that are not the form's are the page's business")
}

func TestParse_UnseenQuestions(t *testing.T) {
	f := deskForm(t)
	// Without the script: the form showed has_car but not what hangs on it.
	values := url.Values{"cf.company": {"Acme"}, "cf.rules": {"true"}, "cf.has_car": {"true"},
		"cf._shown": {"company,email,phone,day,arrive,site_url,notes,parcels,weight,size,floor,has_car,host,badge,rules,sig"}}
	res := formview.Parse(f, values, opts())
	assert.False(t, res.OK())
	assert.Equal(t, []string{"plate", "ev"}, res.Unseen)
	assert.Empty(t, res.Errors, "no problem shown for a question not yet asked")
	assert.Nil(t, res.Answers)

	d := render(t, f, values, res.Errors, opts())
	assert.False(t, has(d.question("plate"), "hidden"), "rendered again, it asks them")

	values.Set("cf._shown", get(d.all(func(n *html.Node) bool { return has(n, "data-svc-shown") })[0], "value"))
	values.Set("cf.plate", "AB12")
	res = formview.Parse(f, values, opts())
	assert.True(t, res.OK(), "%+v", res)
	assert.Equal(t, raw(`"AB12"`), res.Answers["plate"])

	res = formview.Parse(f, url.Values{"cf.company": {"Acme"}, "cf.rules": {"true"}, "cf.has_car": {"false"}}, opts())
	assert.NotEmpty(t, res.Unseen, "no shown list (not our page): render it first")
}

func TestParse_ConsentAndYesNo(t *testing.T) {
	f := deskForm(t)
	res := formview.Parse(f, submitted(f, "company", "Acme", "has_car", "false", "rules", "yes"), opts())
	assert.Equal(t, []form.FieldError{{Field: "rules", Message: "must be true or false"}}, res.Errors)
	res = formview.Parse(f, submitted(f, "company", "Acme", "has_car", "false", "rules", "false"), opts())
	assert.Equal(t, []form.FieldError{{Field: "rules", Message: "must be accepted"}}, res.Errors)
	res = formview.Parse(f, submitted(f, complete...), opts())
	assert.Equal(t, raw(`true`), res.Answers["rules"])
	assert.Equal(t, raw(`false`), res.Answers["has_car"], "no is an answer")
}

func TestParse_HostileValues(t *testing.T) {
	f := deskForm(t)
	values := submitted(f, with(
		"parcels", "1e999999999",
		"weight", "-0",
		"size", strings.Repeat("l", 1<<16),
		"floor", "[1]",
		"host", "\"><script>",
		"notes", "\xff\xfe",
	)...)
	values["cf.company"] = []string{"", "second"}
	res := formview.Parse(f, values, opts())
	assert.Nil(t, res.Answers)
	assert.Equal(t, []form.FieldError{
		{Field: "company", Message: "is required"},
		{Field: "floor", Message: "must be an integer"},
		{Field: "host", Message: "must be a person ID (person_ followed by 26 characters)"},
		{Field: "parcels", Message: "must be between -9007199254740991 and 9007199254740991"},
		{Field: "size", Message: "must be at most 2000 characters"},
		{Field: "weight", Message: "must be at least 0.5"},
	}, res.Errors)
	// Invalid UTF-8 is text like any other to the form; it is stored as
	// JSON with replacement characters.
	_, err := formview.Render(f, values, res.Errors, opts())
	require.NoError(t, err)
}

func TestValues_RoundTrip(t *testing.T) {
	f := deskForm(t)
	answers := map[string]json.RawMessage{
		"company": raw(`"Acme"`), "has_car": raw(`true`), "plate": raw(`"AB12"`), "ev": raw(`true`),
		"charger": raw(`"ccs"`), "rules": raw(`true`), "parcels": raw(`12`), "weight": raw(`2.5`),
		"arrive": raw(`"2026-11-21T08:30:00Z"`), "host": raw(`"` + grace + `"`), "size": raw(`"m"`),
		"notes": raw(`"a\nb"`), "floor": raw(`3`),
	}
	values := formview.Values(f, answers, opts())
	assert.Equal(t, "2026-11-21T09:30", values.Get("cf.arrive"), "datetime-local, in the site's zone")
	assert.Equal(t, "Grace Hopper", values.Get("cf.host.q"))

	d := render(t, f, values, nil, opts())
	assert.Equal(t, "Grace Hopper", get(d.byID["cf-host-search"], "value"))
	assert.Equal(t, "2026-11-21T09:30", get(d.byID["cf-arrive"], "value"))
	assert.False(t, has(d.question("charger"), "hidden"))

	values.Set("cf._shown", strings.Join(f.Keys(), ","))
	res := formview.Parse(f, values, opts())
	require.True(t, res.OK(), "errors %+v unseen %v", res.Errors, res.Unseen)
	answers["arrive"] = raw(`"2026-11-21T09:30:00+01:00"`) // the same instant, in the site's zone
	assert.Equal(t, answers, res.Answers)
}
