// Package gate decides and acts at one gate: a scanned pass token in, a
// relay pulse and a fact out.
//
// It may import the standard library, shared/ packages, sync/protocol (for
// its vocabulary: visits, gates, facts) and gate/relay; never edge/, whose
// cache it reaches through the State and Store interfaces it declares. Its
// tests use edge/cache as the real store.
//
// # A scan
//
// Gate.Scan trims the text and verifies it as a pass token against the
// site's keys (passtoken.Verify); text starting with "E1:" is an
// employee's personal pass instead (below). What follows is refused, in
// this order:
//
//  1. invalid_token: the text is malformed, names an unknown key or its
//     signature does not match. Logged as an invalid scan.
//  2. wrong_gate: the token is for another site.
//  3. stale_cache: the cache is older than the site's offline limit (or
//     has never been synced, or holds no settings) and the gate fails
//     secure. A gate set to fail open decides on regardless.
//  4. the pass-rule decision (passrule.Decide), on the visit as the cache
//     knows it, which wins over the token; for a visit the edge has never
//     received, on the token's claims alone (status expected).
//  5. already_in and not_in: the visit's state does not allow the move
//     (below).
//
// An admit is recorded first, and only then is the relay commanded:
// Store.Record makes the fact and the visits it changed durable (fsync'd)
// in one transaction before it returns, so a power cut at any instant
// leaves either no opening, or an opening with its fact. An admit that
// cannot be recorded (a full disk, an I/O error) opens nothing: the scan
// is refused record_failed, with ErrRecord in the Result, and the store
// reports the failure for the appliance's health. A relay that fails
// after the record is compensated: a relay_failed refusal that voids the
// admit (Fact.Voids) is recorded with the visits as they were before it
// (and, for a punch, the person's last punch as it was), and the Result
// carries ErrRelay. Every scan, admitted or refused, is recorded through
// Store.Record as one fact (with the visits it changed, in one
// transaction); a relay failure adds the voiding refusal.
//
// # Walk-in badges
//
// Text starting with "B1:" is a walk-in badge (passtoken.VerifyBadge),
// signed by a site appliance's own key for a visitor who walked in at the
// desk. It is verified with the badge keys the cloud certified for this
// gate's site (State.BadgeKeysAt) and with nothing else, and a badge key
// is never among the keys that verify passes (State.KeysAt): a badge
// naming another site, or signed by a key of another site or by an
// organisation key, is invalid_token, as is a pass or personal pass
// signed by a badge key. A verified badge then decides as a pass for
// every gate of the site with no lower bound and the end of the badge's
// day (its not-after) as its end: by the token alone for a visit the edge
// has never received, and on the cached visit otherwise, which wins (a
// cancellation, a revocation or a check-out stops the badge). Two rules
// are the badge's own: its day bounds the cached visit's pass too (a
// badge is a day pass, whatever the cloud's visit has become), and a
// checked-out visit is refused ended rather than re-entered (a walk-in
// who signed out signs in again at the desk).
//
// # Directions
//
// The gate's direction comes from the cache (entry, exit or both); a gate
// the cache does not know is taken as an entry gate, and logged.
//
//   - entry: an expected visit is checked in (uses+1) and its gate_id is
//     the gate; a checked-out visit whose pass still admits is a
//     re-entry: a new visit, checked in at the gate, whose for_visit_id
//     names the pass's visit, and the old visit's reentered_as names it; a
//     visit never seen is checked in as the token describes it. A visit
//     checked in at no gate (protocol.Visit.AtDesk: at the reception
//     desk, or by the API without a gate) enters once: an entered fact,
//     the visit's gate_id becomes the gate and AtDesk goes, its uses
//     unchanged (a single-use pass used at the desk still lets its holder
//     through the entrance: the same admission). Any other visit already
//     checked in is refused already_in (anti-passback: one pass cannot
//     let two people in).
//   - exit: a checked-in visit is checked out. Leaving is not held by pass
//     rules (a pass that expired, is used up, is outside its hours or
//     names other gates still lets its holder out); a visit that is not
//     checked in is refused not_in.
//   - both: a checked-in visit that came in through a gate is checked
//     out; anything else is judged as at an entry gate, a visit checked
//     in at the desk included (it enters). So one turnstile used both ways
//     toggles.
//
// The desk (DecideAtDesk) decides as an entry gate with no ID: it never
// makes an entered fact, and a check-in there sets no gate_id; the desk's
// fact marks the visit AtDesk when the edge's cache records it.
//
// Re-entries make a chain: each visit's reentered_as names the next. A
// scan follows the chain from the token's visit to the newest one, which
// is the visit judged, so single use is counted along the chain as the
// cloud counts it.
//
// # Personal passes
//
// A personal pass (passtoken.VerifyPerson) clocks its holder in or out: an
// admit records a punch fact (person, direction, gate, scan time), and the
// cache makes it the person's last punch in the same transaction. Refused,
// in this order: invalid_token (as above); stale_cache (as above, for a
// gate that fails secure); person_inactive when the cache holds the person
// deactivated; pass_replaced when the token's issue time is not the
// cached person's current pass's. A person the cache does not hold (made
// while the site was offline) is admitted on the signature alone, as a
// visit never received is. Personal passes name no site or gates: one
// pass works at every site of the organisation.
//
// The direction: in at an entry gate, out at an exit gate, and at a gate
// used both ways the opposite of the person's last punch at the site (in
// when there is none). A scan at the gate of the person's last punch
// within PunchRepeat of it is the same passage held to the reader twice:
// the door opens again and a passage fact records the opening, not a new
// punch (Result.Repeat), so a gate used both ways does not turn the punch
// around and no opening goes unrecorded. There is no
// anti-passback for people: an entry gate punches in whatever came before.
// A relay that fails after the punch was recorded voids it, as above.
//
// # Concurrency
//
// Scans of one pass are serialised across all gates sharing a *Passes,
// from the decision to the record, so two readers cannot both admit a
// single-use pass or make two re-entries from the same state; a personal
// pass's scans likewise, by person, so two readers cannot both punch. Scans of
// different passes run in parallel. Decide is the decision alone: no
// lock, no relay, no record.
package gate
