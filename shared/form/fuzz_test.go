package form_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/svc-vms/svc/shared/form"
)

// FuzzParse: Parse never panics, and what it accepts it accepts again in
// its canonical form, with the same meaning.
func FuzzParse(f *testing.F) {
	f.Add(kitchenSinkJSON())
	for _, vt := range form.BuiltinTypes {
		f.Add(form.Default(vt))
	}
	f.Add([]byte(`{"type":"object","properties":{},"x-svc-order":[]}`))
	f.Add([]byte(`{"type":"object","properties":{"n":{"type":"integer","enum":[1.0,2e0],"x-svc-labels":{"1":"One"}}},"x-svc-order":["n"]}`))
	f.Add([]byte(`{"type":"object","properties":{"a":{"type":"string","pattern":"(","x-svc-show-if":{"field":"a","equals":"x"}}},"x-svc-order":["a"]}`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]`))
	f.Fuzz(func(t *testing.T, schema []byte) {
		a, err := form.Parse(schema)
		if err != nil {
			return
		}
		b, err := form.Parse(a.Schema())
		if err != nil {
			t.Fatalf("canonical schema %s does not parse: %v", a.Schema(), err)
		}
		if !bytes.Equal(a.Schema(), b.Schema()) {
			t.Fatalf("canonical schema changed on a second parse:\n%s\n%s", a.Schema(), b.Schema())
		}
		if !slices.Equal(a.Keys(), b.Keys()) || !bytes.Equal(a.Public(), b.Public()) || a.HasPublic() != b.HasPublic() {
			t.Fatalf("a second parse means something else: %v %v", a.Keys(), b.Keys())
		}
		p, err := form.Parse(a.Public())
		if err != nil {
			t.Fatalf("public form %s does not parse: %v", a.Public(), err)
		}
		if !bytes.Equal(p.Schema(), a.Public()) || !bytes.Equal(p.Public(), a.Public()) {
			t.Fatalf("public form is not canonical or not its own public form: %s", a.Public())
		}
	})
}

// FuzzValidate: answers of any shape never make Validate, ValidateAtDesk,
// PersonRefs or Redact panic; the desk's problems are sorted, one per key; problems name keys that were sent, once each, in order; and
// what Validate stores validates again to itself.
func FuzzValidate(f *testing.F) {
	forms := []*form.Form{mustParse(f, kitchenSinkJSON())}
	for _, vt := range form.BuiltinTypes {
		forms = append(forms, mustParse(f, form.Default(vt)))
	}
	f.Add([]byte(`{"name":"Ada","count":2.0,"weight":1.50,"car":true,"host":"` + person + `"}`))
	f.Add([]byte(`{"name":null,"nope":1,"size":"xl","link":"javascript:x","day":"2026-02-30"}`))
	f.Add([]byte(`{"company":"Acme","has_vehicle":true,"vehicle_type":"van","nda_accepted":true,"meeting_room":"4.01"}`))
	f.Add([]byte(`{"parcel_count":1e3,"carrier":"dhl","recipient":"person_00000000000000000000000000"}`))
	f.Add([]byte(`{"guests":9007199254740991,"notes":"\u0000","badge":"B"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var answers map[string]json.RawMessage
		if json.Unmarshal(body, &answers) != nil {
			return
		}
		for _, fm := range forms {
			for _, site := range []string{siteA, ""} {
				out, errs := fm.ValidateAtDesk(answers, site)
				for i, e := range errs {
					if e.Message == "" || i > 0 && errs[i-1].Field >= e.Field {
						t.Fatalf("desk problems not sorted by key, one each: %+v", errs)
					}
				}
				if (errs == nil) == (out == nil) {
					t.Fatalf("desk: answers %v beside problems %v", out, errs)
				}
				fm.Questions()
			}
			for _, opts := range []form.Options{{SiteID: siteA}, {Public: true, SiteID: siteB}, {}} {
				out, errs := fm.Validate(answers, opts)
				for i, e := range errs {
					if _, sent := answers[e.Field]; !sent || e.Message == "" {
						t.Fatalf("problem %+v is not about an answer sent", e)
					}
					if i > 0 && errs[i-1].Field >= e.Field {
						t.Fatalf("problems not sorted by key, one each: %+v", errs)
					}
				}
				if errs != nil {
					if out != nil {
						t.Fatalf("answers to store beside problems: %v", out)
					}
					continue
				}
				again, errs := fm.Validate(out, opts)
				if errs != nil || len(again) != len(out) {
					t.Fatalf("stored answers %v do not validate to themselves: %v", out, errs)
				}
				for k, v := range out {
					if _, sent := answers[k]; !sent || !json.Valid(v) || !bytes.Equal(again[k], v) {
						t.Fatalf("stored answer %s=%s is not its own normal form (%s)", k, v, again[k])
					}
				}
				for _, ref := range fm.PersonRefs(out) {
					if _, ok := out[ref.Key]; !ok {
						t.Fatalf("person reference %+v is not an answer", ref)
					}
				}
				for k := range fm.Redact(out) {
					if _, ok := out[k]; !ok {
						t.Fatalf("Redact made up %s", k)
					}
				}
			}
		}
	})
}
