package kiosk

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/svc-vms/svc/shared/form"
	"github.com/svc-vms/svc/shared/ids"
)

func TestKiosk_WalkInAsksTheTypesFormAndEnforcesRequired(t *testing.T) {
	h := newHarness(t)
	h.pair(h.client, ModeVisitor)
	h.store.types = append(h.store.types, VisitType{Key: "contractor", Name: "Contractor", Schema: form.Default("contractor")})
	super := h.addPerson("Grace Hopper", "Facilities lead")

	page := body(t, h.get(h.client, "/walk-in/details?to=desk&type=contractor&name=Ada"))
	for _, want := range []string{"Type of work", "Permit-to-work number", "safety induction", `data-search-url="/people"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the details page lacks %q", want)
		}
	}
	base := url.Values{"to": {"desk"}, "type": {"contractor"}, "visit_id": {ids.New(ids.Visit)}, "name": {"Ada"},
		"cf._shown": {hiddenValue(t, page, "cf._shown")}}

	// Required questions are enforced at the desk.
	res := h.post(h.client, "/walk-in", base)
	b := body(t, res)
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(b, "is required") {
		t.Fatalf("no answers: %d, 'is required' shown: %v", res.StatusCode, strings.Contains(b, "is required"))
	}
	if len(h.store.walkIns) != 0 {
		t.Fatalf("a walk-in was made without its required answers")
	}

	// Electrical work requires a permit and a supervisor (allOf/if/then).
	f := cloneValues(base)
	f.Set("cf.company", "Sparks Ltd")
	f.Set("cf.work_area", "electrical")
	f.Set("cf._shown", "company,insurance_expiry,work_area,permit_number,safety_induction,supervisor")
	res = h.post(h.client, "/walk-in", f)
	b = body(t, res)
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(b, "Permit-to-work number is required") {
		t.Fatalf("electrical without permit: %d", res.StatusCode)
	}

	f.Set("cf.permit_number", "PTW-118")
	f.Set("cf.supervisor", super.ID)
	res = h.post(h.client, "/walk-in", f)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("complete answers: %d %s", res.StatusCode, body(t, res))
	}
	if c := h.store.walkIns[0].Visitor.Company; c != "Sparks Ltd" {
		t.Errorf("visitor company = %q, want the form's answer", c)
	}
	if strings.Contains(page, `id="company"`) {
		t.Errorf("the company is asked twice: by the kiosk and by the form")
	}
	got := h.store.walkIns[0].CustomFields
	for k, want := range map[string]string{"company": `"Sparks Ltd"`, "work_area": `"electrical"`, "permit_number": `"PTW-118"`, "supervisor": `"` + super.ID + `"`} {
		if string(got[k]) != want {
			t.Errorf("custom_fields.%s = %s, want %s", k, got[k], want)
		}
	}
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
