package formview_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/kiosk/formview"
	"github.com/svc-vms/svc/shared/form"
)

// largeForm has n questions of every kind, a third of them hanging on a
// yes/no question and required when it is yes.
func largeForm(tb testing.TB, n int) *form.Form {
	tb.Helper()
	props := map[string]any{"gate": map[string]any{"type": "boolean", "title": "Anything to declare?"}}
	order := []string{"gate"}
	var then []string
	for i := 0; len(order) < n; i++ {
		k := fmt.Sprintf("q%d", i)
		var q map[string]any
		switch i % 6 {
		case 0:
			q = map[string]any{"type": "string", "title": "Text " + k, "description": "Help for " + k, "maxLength": 200}
		case 1:
			q = map[string]any{"type": "integer", "title": "Count " + k, "minimum": 0, "maximum": 99, "x-svc-unit": "items"}
		case 2:
			q = map[string]any{"type": "string", "title": "Pick " + k, "enum": []string{"a", "b", "c"}, "x-svc-labels": map[string]string{"a": "A", "b": "B", "c": "C"}}
		case 3:
			q = map[string]any{"type": "string", "title": "Long list " + k, "enum": []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}}
		case 4:
			q = map[string]any{"type": "boolean", "title": "Yes or no " + k}
		case 5:
			q = map[string]any{"type": "string", "title": "Who " + k, "x-svc-type": "person"}
		}
		if i%3 == 0 {
			q["x-svc-show-if"] = map[string]any{"field": "gate", "equals": true}
			then = append(then, k)
		}
		props[k] = q
		order = append(order, k)
	}
	schema := map[string]any{
		"type": "object", "properties": props, "x-svc-order": order, "required": []string{"gate"},
		"allOf": []any{map[string]any{
			"if":   map[string]any{"properties": map[string]any{"gate": map[string]any{"const": true}}, "required": []string{"gate"}},
			"then": map[string]any{"required": then},
		}},
	}
	b, err := json.Marshal(schema)
	require.NoError(tb, err)
	f, err := form.Parse(b)
	require.NoError(tb, err)
	return f
}

// BenchmarkRender renders each built-in default form and a form of 100
// questions (the most a form may have), as a submitted form shown again
// with a problem.
func BenchmarkRender(b *testing.B) {
	forms := map[string]*form.Form{}
	for _, vt := range form.BuiltinTypes {
		f, err := form.Parse(form.Default(vt))
		require.NoError(b, err)
		forms[vt] = f
	}
	forms["large100"] = largeForm(b, form.MaxQuestions)
	o := opts()
	for name, f := range forms {
		values := url.Values{"cf.gate": {"true"}, "cf.has_vehicle": {"true"}, "cf.work_area": {"electrical"}}
		values.Set("cf._shown", strings.Join(f.Keys(), ","))
		errs := []form.FieldError{{Field: f.Keys()[0], Message: "is required"}}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var size int
			for b.Loop() {
				h, err := formview.Render(f, values, errs, o)
				if err != nil {
					b.Fatal(err)
				}
				size = len(h)
			}
			b.ReportMetric(float64(size), "bytes/page")
		})
	}
}

// BenchmarkParse reads the large form submitted with every question shown
// answered.
func BenchmarkParse(b *testing.B) {
	f := largeForm(b, form.MaxQuestions)
	values := url.Values{"cf.gate": {"true"}, "cf._shown": {strings.Join(f.Keys(), ",")}}
	for _, q := range f.Questions() {
		switch {
		case q.XType == "person":
			values.Set("cf."+q.Key, ada)
		case q.Type == "integer":
			values.Set("cf."+q.Key, "7")
		case q.Type == "boolean":
			values.Set("cf."+q.Key, "true")
		case q.Choices != nil:
			values.Set("cf."+q.Key, "a")
		default:
			values.Set("cf."+q.Key, "some text")
		}
	}
	o := opts()
	if res := formview.Parse(f, values, o); !res.OK() {
		b.Fatalf("%+v %v", res.Errors, res.Unseen)
	}
	b.ReportAllocs()
	for b.Loop() {
		formview.Parse(f, values, o)
	}
}

// FuzzParse: any form values never make Parse or Render panic; problems
// name questions of the form, sorted, one each; and accepted answers are
// what ValidateAtDesk accepts.
func FuzzParse(f *testing.F) {
	fm := deskForm(f)
	f.Add("cf.company=Acme&cf.has_car=true&cf.rules=true&cf.plate=AB12&cf._shown=company,has_car,plate,rules")
	f.Add("cf.parcels=1e999&cf.weight=-0&cf.host=person_x&cf.host.q=a&cf.arrive=2026-11-21T09:30")
	f.Add("cf.size=%00&cf.floor=[1]&cf.has_car=maybe&cf.ev=true&cf.charger=ccs")
	o := opts()
	o.SearchPeople = func(q string) []formview.Person { return []formview.Person{{ID: ada, Name: q}} }
	f.Fuzz(func(t *testing.T, query string) {
		values, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		res := formview.Parse(fm, values, o)
		for i, e := range res.Errors {
			if _, ok := fm.Question(e.Field); !ok || e.Message == "" {
				t.Fatalf("problem %+v is not about a question", e)
			}
			if i > 0 && res.Errors[i-1].Field >= e.Field {
				t.Fatalf("problems not sorted, one each: %+v", res.Errors)
			}
		}
		if res.OK() {
			if _, errs := fm.ValidateAtDesk(res.Answers, siteA); errs != nil {
				t.Fatalf("accepted answers %v are refused at the desk: %v", res.Answers, errs)
			}
		}
		if _, err := formview.Render(fm, values, res.Errors, o); err != nil {
			t.Fatal(err)
		}
	})
}
