package formview_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/svc-vms/svc/kiosk/formview"
	"github.com/svc-vms/svc/shared/form"
	"github.com/svc-vms/svc/shared/ids"
)

var (
	siteA = ids.New(ids.Site)
	siteB = ids.New(ids.Site)
	ada   = ids.New(ids.Person)
	grace = ids.New(ids.Person)
)

// desk is a form with every kind of question the kiosk asks and every
// condition a form can state.
const desk = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "company": {"type": "string", "title": "Company", "description": "Where you work.", "maxLength": 50, "x-svc-type": "text"},
    "email": {"type": "string", "title": "Email", "format": "email"},
    "phone": {"type": "string", "title": "Phone", "x-svc-type": "phone"},
    "day": {"type": "string", "title": "Day", "format": "date"},
    "arrive": {"type": "string", "title": "Arrival", "format": "date-time"},
    "site_url": {"type": "string", "title": "Website", "format": "uri"},
    "notes": {"type": "string", "title": "Notes", "maxLength": 300, "x-svc-type": "long_text"},
    "parcels": {"type": "integer", "title": "Parcels", "minimum": 1, "maximum": 500, "x-svc-unit": "parcels"},
    "weight": {"type": "number", "title": "Weight", "minimum": 0.5, "x-svc-unit": "kg"},
    "size": {"type": "string", "title": "Size", "enum": ["s", "m", "l"], "x-svc-labels": {"s": "Small", "m": "Medium", "l": "Large"}},
    "floor": {"type": "integer", "title": "Floor", "enum": [0, 1, 2, 3, 4, 5, 6, 7], "x-svc-labels": {"0": "Ground floor"}},
    "has_car": {"type": "boolean", "title": "Did you come by car?", "x-svc-type": "yes_no"},
    "plate": {"type": "string", "title": "Number plate", "maxLength": 10, "x-svc-show-if": {"field": "has_car", "equals": true}},
    "ev": {"type": "boolean", "title": "Electric?", "x-svc-labels": {"true": "Electric", "false": "Fuel"}, "x-svc-show-if": {"field": "has_car", "equals": true}},
    "charger": {"type": "string", "title": "Charger", "enum": ["type2", "ccs"], "x-svc-show-if": {"field": "ev", "equals": true}},
    "host": {"type": "string", "title": "Who are you seeing?", "x-svc-type": "person"},
    "badge": {"type": "string", "title": "Badge colour", "x-svc-sites": ["SITE_A"]},
    "rules": {"type": "boolean", "title": "Site rules", "x-svc-type": "consent", "x-svc-consent-text": "I will follow the site rules."},
    "photo": {"type": "string", "title": "Photo", "x-svc-type": "photo"},
    "sig": {"type": "string", "title": "Signature", "x-svc-type": "signature"}
  },
  "required": ["company", "has_car", "rules", "photo"],
  "allOf": [
    {"if": {"properties": {"has_car": {"const": true}}, "required": ["has_car"]}, "then": {"required": ["plate"]}},
    {"if": {"properties": {"has_car": {"const": true}, "size": {"const": "l"}}, "required": ["has_car", "size"]}, "then": {"required": ["parcels", "host"]}}
  ],
  "x-svc-order": ["company", "email", "phone", "day", "arrive", "site_url", "notes", "parcels", "weight", "size", "floor",
    "has_car", "plate", "ev", "charger", "host", "badge", "rules", "photo", "sig"]
}`

func deskForm(tb testing.TB) *form.Form {
	tb.Helper()
	f, err := form.Parse([]byte(strings.ReplaceAll(desk, "SITE_A", siteA)))
	require.NoError(tb, err)
	return f
}

// words is a catalogue that marks each of the kiosk's words, so a test can
// tell them from the schema's texts.
func words(key string) string { return "«" + key + "»" }

var people = map[string]string{ada: "Ada Lovelace", grace: "Grace Hopper"}

func opts() formview.Options {
	return formview.Options{
		SiteID: siteA,
		T:      words,
		People: func(id string) (string, bool) {
			n, ok := people[id]
			return n, ok
		},
		SearchURL: "/kiosk/people?limit=8",
		Location:  time.FixedZone("CET", 3600),
	}
}

func render(t *testing.T, f *form.Form, values url.Values, errs []form.FieldError, o formview.Options) *dom {
	t.Helper()
	h, err := formview.Render(f, values, errs, o)
	require.NoError(t, err)
	d := parseDOM(t, h)
	checkAccessible(t, d)
	return d
}

// submitted returns form values as a browser with the script sends them:
// pairs (a later pair for the same key wins), and every question on the
// shown list.
func submitted(f *form.Form, pairs ...string) url.Values {
	v := url.Values{}
	for i := 0; i < len(pairs); i += 2 {
		v.Set(formview.FieldPrefix+pairs[i], pairs[i+1]) // a later pair wins
	}
	v.Set("cf._shown", strings.Join(f.Keys(), ","))
	return v
}

func TestRender_EveryQuestionInOrder(t *testing.T) {
	f := deskForm(t)
	d := render(t, f, nil, nil, opts())
	assert.Equal(t, []string{"company", "email", "phone", "day", "arrive", "site_url", "notes", "parcels", "weight", "size", "floor",
		"has_car", "plate", "ev", "charger", "host", "badge", "rules", "sig"}, d.keys(),
		"x-svc-order; photo is not asked at the desk")
	root := d.all(func(n *html.Node) bool { return has(n, "data-svc-form") })
	require.Len(t, root, 1)
	assert.Equal(t, "«form.person_none»", get(root[0], "data-t-none"))
}

func TestRender_TextQuestions(t *testing.T) {
	d := render(t, deskForm(t), nil, nil, opts())
	company := d.byID["cf-company"]
	assert.Equal(t, "input", company.Data)
	assert.Equal(t, "cf.company", get(company, "name"))
	assert.Equal(t, "text", get(company, "type"))
	assert.Equal(t, "50", get(company, "maxlength"))
	assert.Equal(t, "Where you work.", text(d.byID["cf-company-help"]))
	assert.Equal(t, []string{"cf-company-help"}, describedBy(company))

	for id, typ := range map[string]string{"cf-email": "email", "cf-phone": "tel", "cf-day": "date", "cf-arrive": "datetime-local", "cf-site_url": "url", "cf-sig": "text"} {
		assert.Equal(t, typ, get(d.byID[id], "type"), id)
	}
	notes := d.byID["cf-notes"]
	assert.Equal(t, "textarea", notes.Data, "long_text is multi-line")
	assert.Equal(t, "300", get(notes, "maxlength"))
}

func TestRender_NumbersWithUnits(t *testing.T) {
	d := render(t, deskForm(t), nil, nil, opts())
	parcels := d.byID["cf-parcels"]
	assert.Equal(t, "numeric", get(parcels, "inputmode"))
	assert.Equal(t, "parcels", text(d.byID["cf-parcels-unit"]))
	assert.True(t, describes(parcels, "cf-parcels-unit"), "the unit is read with the field")
	weight := d.byID["cf-weight"]
	assert.Equal(t, "decimal", get(weight, "inputmode"))
	assert.Equal(t, "kg", text(d.byID["cf-weight-unit"]))
}

func TestRender_EnumLabels(t *testing.T) {
	d := render(t, deskForm(t), url.Values{"cf.size": {"m"}}, nil, opts())

	size := d.question("size")
	radios := within(size, func(n *html.Node) bool { return get(n, "type") == "radio" })
	require.Len(t, radios, 3, "few choices: radio buttons")
	var labels []string
	for _, r := range radios {
		labels = append(labels, text(labelFor(d, get(r, "id"))))
		assert.Equal(t, "cf.size", get(r, "name"))
	}
	assert.Equal(t, []string{"Small", "Medium", "Large"}, labels)
	assert.True(t, has(radios[1], "checked"), "the answer so far is kept")
	assert.False(t, has(radios[0], "checked"))
	group := within(size, func(n *html.Node) bool { return n.Data == "fieldset" })[0]
	assert.Equal(t, "radiogroup", get(group, "role"))
	assert.Contains(t, text(group), "Size")

	floor := d.byID["cf-floor"]
	assert.Equal(t, "select", floor.Data, "many choices: a list")
	opts := within(floor, func(n *html.Node) bool { return n.Data == "option" })
	require.Len(t, opts, 9)
	assert.Equal(t, "«form.choose»", text(opts[0]))
	assert.Equal(t, "", get(opts[0], "value"))
	assert.Equal(t, "Ground floor", text(opts[1]), "labelled")
	assert.Equal(t, "0", get(opts[1], "value"))
	assert.Equal(t, "1", text(opts[2]), "unlabelled: the value")
}

func labelFor(d *dom, id string) *html.Node {
	for _, l := range d.tag("label") {
		if get(l, "for") == id {
			return l
		}
	}
	return nil
}

func TestRender_YesNo(t *testing.T) {
	d := render(t, deskForm(t), url.Values{"cf.has_car": {"true"}}, nil, opts())
	radios := within(d.question("has_car"), func(n *html.Node) bool { return get(n, "type") == "radio" })
	require.Len(t, radios, 2)
	assert.Equal(t, []string{"true", "false"}, []string{get(radios[0], "value"), get(radios[1], "value")})
	assert.Equal(t, "«form.yes»", text(labelFor(d, get(radios[0], "id"))), "the kiosk's words")
	assert.Equal(t, "«form.no»", text(labelFor(d, get(radios[1], "id"))))
	assert.True(t, has(radios[0], "checked"))
	group := within(d.question("has_car"), func(n *html.Node) bool { return n.Data == "fieldset" })[0]
	assert.Contains(t, get(group, "class"), "q-yesno", "styled as two large buttons")

	ev := within(d.question("ev"), func(n *html.Node) bool { return get(n, "type") == "radio" })
	assert.Equal(t, "Electric", text(labelFor(d, get(ev[0], "id"))), "x-svc-labels win over the kiosk's words")
	assert.Equal(t, "Fuel", text(labelFor(d, get(ev[1], "id"))))
}

func TestRender_Consent(t *testing.T) {
	d := render(t, deskForm(t), nil, nil, opts())
	box := d.byID["cf-rules"]
	assert.Equal(t, "checkbox", get(box, "type"))
	assert.Equal(t, "true", get(box, "value"))
	assert.Equal(t, "«form.agree»", text(labelFor(d, "cf-rules")))
	assert.Equal(t, "I will follow the site rules.", text(d.byID["cf-rules-text"]))
	assert.True(t, describes(box, "cf-rules-text"), "the consent text describes the checkbox")
	assert.Equal(t, "true", get(box, "aria-required"))
	assert.False(t, has(box, "checked"))

	d = render(t, deskForm(t), url.Values{"cf.rules": {"true"}}, nil, opts())
	assert.True(t, has(d.byID["cf-rules"], "checked"))
}

func TestRender_Person(t *testing.T) {
	d := render(t, deskForm(t), url.Values{"cf.host": {ada}}, nil, opts())
	search := d.byID["cf-host-search"]
	assert.Equal(t, "Who are you seeing?", spoken(labelFor(d, "cf-host-search")))
	assert.Equal(t, "cf.host.q", get(search, "name"))
	assert.Equal(t, "/kiosk/people?limit=8", get(search, "data-search-url"))
	assert.Equal(t, "Ada Lovelace", get(search, "value"), "the chosen person's name, from People")
	assert.True(t, describes(search, "cf-host-hint"))
	assert.Equal(t, "«form.person_hint»", text(d.byID["cf-host-hint"]))
	id := d.byID["cf-host"]
	assert.Equal(t, "hidden", get(id, "type"))
	assert.Equal(t, "cf.host", get(id, "name"))
	assert.Equal(t, ada, get(id, "value"))
	assert.NotNil(t, d.byID[get(search, "aria-controls")], "where the script lists matches")
}

func TestRender_PersonWithoutScript(t *testing.T) {
	o := opts()
	var asked string
	o.SearchPeople = func(q string) []formview.Person {
		asked = q
		return []formview.Person{{ID: ada, Name: "Ada Lovelace", JobTitle: "Analyst"}, {ID: grace, Name: "Grace Hopper"}}
	}
	f := deskForm(t)
	values := submitted(f, "host", "", "host.q", "  a ")
	res := formview.Parse(f, values, o)
	assert.Contains(t, res.Errors, form.FieldError{Field: "host", Message: "«form.person_choose»"}, "a name typed is not an answer")

	d := render(t, f, values, res.Errors, o)
	assert.Equal(t, "a", asked)
	matches := within(d.question("host"), func(n *html.Node) bool { return get(n, "type") == "radio" })
	require.Len(t, matches, 2)
	assert.Equal(t, ada, get(matches[0], "value"))
	assert.Equal(t, "cf.host", get(matches[0], "name"))
	assert.Equal(t, "Ada Lovelace, Analyst", text(labelFor(d, get(matches[0], "id"))))
	assert.Empty(t, within(d.question("host"), func(n *html.Node) bool { return get(n, "type") == "hidden" && get(n, "name") == "cf.host" }),
		"no hidden ID beside the matches: the radio is the answer")

	searched := within(d.question("host"), byName("cf.host.searched"))
	require.Len(t, searched, 1)
	res = formview.Parse(f, submitted(f, "host", grace, "host.q", "a", "host.searched", get(searched[0], "value")), o)
	assert.NotContains(t, errorFields(res), "host", "a match picked is the answer, whatever was typed")
	res = formview.Parse(f, submitted(f, "host", ada, "host.q", "Grace"), o)
	assert.Contains(t, res.Errors, form.FieldError{Field: "host", Message: "«form.person_choose»"},
		"a chosen person's name typed over is a new search")
}

func errorFields(r formview.Result) []string {
	var keys []string
	for _, e := range r.Errors {
		keys = append(keys, e.Field)
	}
	return keys
}

func TestRender_Sites(t *testing.T) {
	f := deskForm(t)
	assert.NotNil(t, render(t, f, nil, nil, opts()).question("badge"))
	o := opts()
	o.SiteID = siteB
	d := render(t, f, nil, nil, o)
	assert.Nil(t, d.question("badge"), "x-svc-sites: not in another site's page at all")
	assert.Empty(t, d.all(byName("cf.badge")))
}

func TestRender_ShowIf(t *testing.T) {
	f := deskForm(t)
	hidden := func(d *dom, key string) bool {
		q := d.question(key)
		require.NotNil(t, q, key)
		ctls := within(q, func(n *html.Node) bool { return n.Data == "input" || n.Data == "select" || n.Data == "textarea" })
		require.NotEmpty(t, ctls)
		for _, c := range ctls {
			assert.Equal(t, has(q, "hidden"), has(c, "disabled"), "%s: a hidden question's controls are disabled, a shown one's are not", key)
		}
		return has(q, "hidden")
	}
	shown := func(d *dom) string {
		return get(d.all(func(n *html.Node) bool { return has(n, "data-svc-shown") })[0], "value")
	}

	d := render(t, f, nil, nil, opts())
	assert.True(t, hidden(d, "plate"))
	assert.True(t, hidden(d, "ev"))
	assert.True(t, hidden(d, "charger"))
	assert.False(t, hidden(d, "has_car"))
	assert.Equal(t, `{"k":"has_car","v":true}`, get(d.question("plate"), "data-show-if"), "for the script")
	assert.NotContains(t, strings.Split(shown(d), ","), "plate")

	d = render(t, f, url.Values{"cf.has_car": {"true"}}, nil, opts())
	assert.False(t, hidden(d, "plate"), "the server shows it from the answers so far")
	assert.False(t, hidden(d, "ev"))
	assert.True(t, hidden(d, "charger"))
	assert.Contains(t, strings.Split(shown(d), ","), "plate")

	d = render(t, f, url.Values{"cf.has_car": {"true"}, "cf.ev": {"true"}}, nil, opts())
	assert.False(t, hidden(d, "charger"), "nested: ev shown and answered yes")
	d = render(t, f, url.Values{"cf.has_car": {"false"}, "cf.ev": {"true"}, "cf.plate": {"AB12"}}, nil, opts())
	assert.True(t, hidden(d, "charger"), "nested: ev hidden, so its stale answer shows nothing")
	assert.True(t, hidden(d, "plate"))
}

func TestRender_Required(t *testing.T) {
	f := deskForm(t)
	marked := func(d *dom, key string) bool {
		q := d.question(key)
		marks := within(q, func(n *html.Node) bool { return strings.Contains(get(n, "class"), "q-req") })
		require.Len(t, marks, 1, key)
		assert.Equal(t, "«form.required»", text(marks[0]))
		assert.Equal(t, "true", get(marks[0], "aria-hidden"), "aria-required says it to screen readers")
		ctl := within(q, func(n *html.Node) bool { return strings.Contains(get(n, "class"), "q-ctl") })[0]
		visible := !has(marks[0], "hidden")
		assert.Equal(t, visible, get(ctl, "aria-required") == "true", "%s: the mark and aria-required agree", key)
		return visible
	}

	d := render(t, f, nil, nil, opts())
	assert.True(t, marked(d, "company"), "required")
	assert.True(t, marked(d, "has_car"), "required yes/no: on its radio group")
	assert.True(t, marked(d, "rules"), "required consent")
	assert.False(t, marked(d, "email"))
	assert.False(t, marked(d, "plate"), "required only when has_car is yes")
	assert.True(t, has(d.question("company"), "data-required"))
	assert.Equal(t, `[[{"k":"has_car","v":true}]]`, get(d.question("plate"), "data-required-when"))
	assert.Equal(t, `[[{"k":"has_car","v":true},{"k":"size","v":"l"}]]`, get(d.question("host"), "data-required-when"))

	d = render(t, f, url.Values{"cf.has_car": {"true"}}, nil, opts())
	assert.True(t, marked(d, "plate"), "allOf then: required now")
	assert.False(t, marked(d, "parcels"), "compound if: one condition of two")
	assert.False(t, marked(d, "host"))
	d = render(t, f, url.Values{"cf.has_car": {"true"}, "cf.size": {"l"}}, nil, opts())
	assert.True(t, marked(d, "parcels"), "compound if: both conditions")
	assert.True(t, marked(d, "host"), "a required person question: on its search field")
}

func TestRender_Errors(t *testing.T) {
	f := deskForm(t)
	errs := []form.FieldError{
		{Field: "company", Message: "is required"},
		{Field: "size", Message: "must be one of s, m, l"},
		{Field: "plate", Message: "is required"}, // hidden now: not shown
	}
	d := render(t, f, nil, errs, opts())
	company := d.byID["cf-company"]
	assert.Equal(t, "true", get(company, "aria-invalid"))
	assert.Equal(t, []string{"cf-company-help", "cf-company-error"}, describedBy(company))
	assert.Equal(t, "«form.error» Company is required", text(d.byID["cf-company-error"]))

	group := within(d.question("size"), func(n *html.Node) bool { return n.Data == "fieldset" })[0]
	assert.Equal(t, "true", get(group, "aria-invalid"))
	assert.True(t, describes(group, "cf-size-error"))

	assert.Nil(t, d.byID["cf-plate-error"])
	assert.False(t, has(d.byID["cf-email"], "aria-invalid"))
}

func TestRender_EscapesHostileSchemaText(t *testing.T) {
	hostile := `<script>alert(1)</script>"><img src=x onerror=alert(2)>`
	schema, err := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"a": map[string]any{"type": "string", "title": hostile, "description": hostile},
			"b": map[string]any{"type": "integer", "title": hostile, "x-svc-unit": "<script>x</script>"},
			"c": map[string]any{"type": "string", "enum": []string{`"><script>x</script>`}, "x-svc-labels": map[string]string{`"><script>x</script>`: hostile}},
			"d": map[string]any{"type": "boolean", "x-svc-type": "consent", "x-svc-consent-text": hostile},
			"e": map[string]any{"type": "string", "title": hostile, "x-svc-type": "person"},
		},
		"x-svc-order": []string{"a", "b", "c", "d", "e"},
	})
	require.NoError(t, err)
	f, err := form.Parse(schema)
	require.NoError(t, err)
	o := opts()
	o.SearchURL = `javascript:alert(3)`
	o.T = func(string) string { return hostile }
	h, err := formview.Render(f, url.Values{"cf.a": {hostile}, "cf.e.q": {hostile}}, []form.FieldError{{Field: "a", Message: hostile}}, o)
	require.NoError(t, err)
	assert.NotContains(t, string(h), "<script")
	assert.NotContains(t, string(h), "<img")
	assert.Contains(t, string(h), "&lt;script&gt;alert(1)&lt;/script&gt;")
	d := parseDOM(t, h)
	assert.Empty(t, d.tag("script"))
	assert.Empty(t, d.tag("img"))
	assert.Equal(t, hostile, get(d.byID["cf-a"], "value"), "an answer is an attribute value, not markup")
	assert.Equal(t, hostile, spoken(labelFor(d, "cf-a")), "the title is text")
	assert.NotContains(t, get(d.byID["cf-e-search"], "data-search-url"), "javascript:", "html/template filters unsafe URLs")
	checkAccessible(t, d)
}

func TestRender_EveryDefaultForm(t *testing.T) {
	for _, vt := range form.BuiltinTypes {
		t.Run(vt, func(t *testing.T) {
			f, err := form.Parse(form.Default(vt))
			require.NoError(t, err)
			d := render(t, f, nil, nil, opts()) // checkAccessible: a label for every control
			assert.Equal(t, f.Keys(), d.keys())
		})
	}
}

func TestMessageKeys_EveryWordComesFromT(t *testing.T) {
	f := deskForm(t)
	used := map[string]bool{}
	o := opts()
	o.T = func(k string) string { used[k] = true; return "«" + k + "»" }
	o.SearchPeople = func(string) []formview.Person { return nil }
	values := url.Values{"cf.host.q": {"x"}}
	res := formview.Parse(f, values, o)
	h, err := formview.Render(f, values, res.Errors, o)
	require.NoError(t, err)
	for k := range used {
		assert.Contains(t, formview.MessageKeys(), k)
	}
	for _, k := range formview.MessageKeys() {
		assert.True(t, used[k], "%s is used", k)
	}
	d := parseDOM(t, h)
	for _, n := range d.tag("label") {
		if strings.Contains(get(n, "for"), "has_car") {
			assert.True(t, strings.HasPrefix(text(n), "«"), "a yes/no label from T: %s", text(n))
		}
	}
}

func TestAssets(t *testing.T) {
	js, err := formview.Assets.ReadFile(formview.ScriptFile)
	require.NoError(t, err)
	for _, hook := range []string{"data-svc-form", "data-show-if", "data-required-when", "data-svc-shown", "data-person-search", "data-search-url", "data-t-none", ".q-req", ".q-ctl"} {
		assert.Contains(t, string(js), hook, "the script reads what Render writes")
	}
	css, err := formview.Assets.ReadFile(formview.StylesheetFile)
	require.NoError(t, err)
	assert.Contains(t, string(css), "min-height: 48px", "touch targets")
}
