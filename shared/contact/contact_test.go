package contact

import "testing"

func TestVisitor_Check(t *testing.T) {
	for _, tc := range []struct {
		v    Visitor
		want map[string]string
	}{
		{Visitor{Name: "Ada", Phone: "+447700900123", Email: "ada@example.com"}, nil},
		{Visitor{Name: "  "}, map[string]string{"visitor.name": "is required and may not be blank"}},
		{Visitor{Name: "Ada", Phone: "07700 900123"}, map[string]string{"visitor.phone": "must be an E.164 number such as +447700900123"}},
		{Visitor{Name: "Ada", Email: "Ada <ada@example.com>"}, map[string]string{"visitor.email": "must be an email address"}},
		{Visitor{Name: "Ada\x07"}, map[string]string{"visitor.name": "may not contain control characters"}},
	} {
		got := map[string]string{}
		for _, p := range tc.v.Check() {
			got[p.Field] = p.Message
		}
		if len(got) != len(tc.want) {
			t.Errorf("%+v: %v, want %v", tc.v, got, tc.want)
			continue
		}
		for f, m := range tc.want {
			if got[f] != m {
				t.Errorf("%+v: %s = %q, want %q", tc.v, f, got[f], m)
			}
		}
	}
}
