package gate_test

import (
	"strings"
	"testing"

	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// FuzzScan: whatever text a reader hands a gate (the site's own passes
// among mutations of them and garbage), Scan never panics, every scan is
// recorded, nothing opens for text that is not a pass of the site's key,
// and every pulse of the relay has its fact in the outbox. The target
// keeps one cache across inputs, as a gate does, so it is not
// deterministic: run it with -fuzzminimizetime 1x, or minimizing each new
// input takes most of the time.
func FuzzScan(f *testing.F) {
	fx := newFixture(f)
	v, p := visit(), employee()
	fx.put(v)
	fx.putPerson(p)
	r, pn := newRelay(f)
	g := fx.newGate(fx.both, false, r)
	tok, ptok := fx.token(v), fx.personToken(p, issued)
	for _, s := range []string{tok, ptok, " " + tok + "\r\n", tok[:len(tok)-1], tok + "A", strings.ToLower(tok),
		passtoken.Prefix, passtoken.PersonPrefix, passtoken.PersonPrefix + tok[len(passtoken.Prefix):], "", "\x00", "E1:::::",
		strings.Repeat("V1:", 400)} {
		f.Add(s)
	}
	outbox := func(t *testing.T) int {
		out, err := fx.c.Outbox(0)
		if err != nil {
			t.Fatal(err)
		}
		return len(out)
	}
	f.Fuzz(func(t *testing.T, text string) {
		before := outbox(t)
		pulses := pn.pulses()
		res := scan(g, text, t0)
		if res.Err != nil {
			t.Fatalf("scan %q: %v", text, res.Err)
		}
		if res.FactID == "" || outbox(t) != before+1 {
			t.Fatalf("scan %q was not recorded once: %+v", text, res)
		}
		if res.Admitted {
			_, verr := passtoken.Verify(strings.TrimSpace(text), fx.c.View().Keys())
			_, perr := passtoken.VerifyPerson(strings.TrimSpace(text), fx.c.View().Keys())
			if verr != nil && perr != nil {
				t.Fatalf("%q opened the gate but is no pass: %v; %v", text, verr, perr)
			}
		} else if res.Kind != protocol.FactRefused {
			t.Fatalf("scan %q: not admitted but kind %s", text, res.Kind)
		}
		want := pulses
		if res.Admitted {
			want++
		}
		if got := pn.pulses(); got != want {
			t.Fatalf("scan %q: %d pulses, want %d", text, got-pulses, want-pulses)
		}
	})
}
