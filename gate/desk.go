package gate

import (
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// desk is the site's reception desk seen as a gate: no ID, so no gate's
// direction or gate_ids apply, and failing open, since a receptionist is
// there to judge when the cache is old.
func desk(siteID string) *Gate { return &Gate{siteID: siteID, failOpen: true} }

// DecideAtDesk decides on a visitor's pass shown at the reception desk of
// site siteID, as an entry gate decides it (the same pass rules, the same
// refusals, a cached visit newer than its token winning), except that the
// pass's gate_ids do not restrict the desk, as the cloud's check-in at the
// desk does not. A personal pass is no visitor's: invalid_token.
func DecideAtDesk(st State, siteID, text string, at time.Time) Decision {
	text = strings.TrimSpace(text)
	if isPersonal(text) {
		return Decision{Kind: protocol.FactRefused, Reason: protocol.ReasonInvalidToken}
	}
	g := desk(siteID)
	claims, badge, err := g.verify(st, text, at)
	if err != nil {
		return Decision{Kind: protocol.FactRefused, Reason: protocol.ReasonInvalidToken}
	}
	return g.decide(st, &claims, badge, at)
}

// PassVisit returns the visit a visitor's pass or walk-in badge names,
// verified as at the desk of site siteID: the organisation's keys for a
// pass, the badge keys certified for this site for a badge.
func PassVisit(st State, siteID, text string, at time.Time) (visitID string, ok bool) {
	text = strings.TrimSpace(text)
	if isPersonal(text) {
		return "", false
	}
	c, _, err := desk(siteID).verify(st, text, at)
	if err != nil || c.SiteID != siteID {
		return "", false
	}
	return c.VisitID, true
}

// DecideVisitAtDesk decides on the cached visit visitID at the desk, as
// DecideAtDesk decides on its pass: the visit found by its invitation's
// short code. A visit the cache does not hold is refused as ended.
func DecideVisitAtDesk(st State, siteID, visitID string, at time.Time) Decision {
	if _, ok := st.Visit(visitID); !ok {
		return Decision{Kind: protocol.FactRefused, Reason: string(passrule.Ended)}
	}
	return desk(siteID).decide(st, &passtoken.Claims{VisitID: visitID, SiteID: siteID}, false, at)
}
