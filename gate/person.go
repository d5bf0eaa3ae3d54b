package gate

import (
	"context"
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// PunchRepeat is how close to a person's last punch a scan of their pass
// at the same gate is the same passage: a pass held to the reader twice,
// or a turnstile that did not turn the first time. The gate opens again
// and records nothing, and a gate used both ways does not turn the punch
// around.
const PunchRepeat = 60 * time.Second

// isPersonal reports whether text is meant as a personal pass: by its
// prefix, so a visit pass is verified exactly as before.
func isPersonal(text string) bool { return strings.HasPrefix(text, passtoken.PersonPrefix) }

// scanPerson is Scan for a personal pass: verify, decide under the
// person's turn, pulse, and record the punch (or the refusal).
func (g *Gate) scanPerson(ctx context.Context, text string, at time.Time, st State, start time.Time) Result {
	claims, err := passtoken.VerifyPerson(text, st.KeysAt(at))
	if err != nil {
		d := Decision{Kind: protocol.FactRefused, Reason: protocol.ReasonInvalidToken}
		res := Result{GateID: g.id, Decision: time.Since(start)}
		g.log.Warn("invalid scan", "length", len(text), "error", err.Error())
		return g.finish(d, res, at)
	}
	// One person's scans take turns across the gates, as one pass's do:
	// the direction at a gate used both ways and the repeat rule read the
	// last punch, which the scan before may be recording.
	held, err := g.passes.lock(ctx, claims.PersonID)
	if err != nil {
		g.log.Warn("scan abandoned waiting for another scan of the pass", "person_id", claims.PersonID, "error", err.Error())
		return Result{GateID: g.id, PersonID: claims.PersonID, Err: err}
	}
	defer g.passes.unlock(claims.PersonID, held)
	d := g.decidePerson(g.store.State(), &claims, at)
	res := Result{GateID: g.id, Decision: time.Since(start)}
	if d.unknownGate {
		g.log.Warn("gate not in the cache; deciding as an entry gate")
	}
	if !d.Admit() {
		return g.finish(d, res, at)
	}
	if d.repeat {
		g.log.Info("scan repeated within the punch repeat: a passage, not a new punch", "person_id", d.PersonID,
			"direction", d.Direction)
	}
	res = g.admit(ctx, d, res, at)
	res.Repeat = d.repeat && res.Admitted
	return res
}

// decidePerson is the decision on a verified personal pass. After a stale
// cache (for a gate that fails secure), the person as the cache knows them
// decides: deactivated, or the pass is not their current one. A person the
// cache does not know (made while the site was offline) is admitted on
// the signature alone, as a visit pass of a visit never received is.
// Then the gate's direction: in at an entry gate, out at an exit gate, and
// at a gate used both ways the opposite of the person's last punch here
// (in when there is none). A scan at the gate of the last punch within
// PunchRepeat of it repeats that punch.
func (g *Gate) decidePerson(st State, c *passtoken.PersonClaims, at time.Time) Decision {
	d := Decision{Kind: protocol.FactRefused, PersonID: c.PersonID}
	if !g.failOpen && stale(st, at) {
		d.Reason = protocol.ReasonStale
		return d
	}
	dir := Entry
	if gt, ok := st.Gate(g.id); ok {
		dir = gt.Direction
	} else {
		d.unknownGate = true
	}
	if p, ok := st.Person(c.PersonID); ok {
		switch {
		case !p.Active:
			d.Reason = protocol.ReasonPersonInactive
			return d
		case c.IssuedAt.Unix() != p.PassIssuedAt:
			d.Reason = protocol.ReasonPassReplaced
			return d
		}
	}
	d.Kind = protocol.FactPunch
	last, punched := st.LastPunch(c.PersonID)
	if punched && last.GateID == g.id && (at.Sub(last.At)).Abs() <= PunchRepeat {
		d.Kind, d.Direction, d.repeat = protocol.FactPassage, last.Direction, true
		return d
	}
	d.undoPunch = &PunchRestore{PersonID: c.PersonID}
	if punched {
		d.undoPunch.Last = &last
	}
	switch {
	case dir == Exit:
		d.Direction = protocol.DirectionOut
	case dir == Both && punched && last.Direction == protocol.DirectionIn:
		d.Direction = protocol.DirectionOut
	default:
		d.Direction = protocol.DirectionIn
	}
	return d
}
