package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// State is the site as the edge knows it at one moment. A gate reads one
// State per decision, so it must not change under the reader: the edge's
// cache View is immutable.
type State interface {
	// Visit returns the visit with this ID.
	Visit(id string) (protocol.Visit, bool)
	// Person returns the person with this ID, active or not; false for
	// one the cloud has not sent (made while the site was offline).
	Person(id string) (protocol.Person, bool)
	// LastPunch returns the last punch fact this edge recorded for the
	// person, at any of its gates; false when none.
	LastPunch(personID string) (protocol.Fact, bool)
	// Gate returns one of the site's gates.
	Gate(id string) (protocol.Gate, bool)
	// KeysAt are the pass-verification keys that verify at the time at (a
	// rotated key retires at a time of its own); the gate does not modify
	// them.
	KeysAt(at time.Time) passtoken.KeySet
	// BadgeKeysAt are the walk-in badge keys certified for the site
	// siteID that verify at the time at: the only keys a badge is verified
	// with, and never used for another kind of pass.
	BadgeKeysAt(siteID string, at time.Time) passtoken.KeySet
	// Location is the site's time zone for daily hours.
	Location() *time.Location
	// Settings returns the site's settings; false until the cloud sent them.
	Settings() (protocol.Settings, bool)
	// SyncedAt is the last contact with the cloud; zero if none.
	SyncedAt() time.Time
}

// Store is where a gate reads the site's state and records what it did.
type Store interface {
	// State returns the latest state. After Record returns, State shows
	// what it recorded.
	State() State
	// Record stores what a scan changed and its fact in one transaction,
	// durably (fsync'd) before it returns, and returns the fact as stored;
	// a punch fact becomes its person's LastPunch in the same transaction.
	// On error nothing is stored; the error is the store's.
	Record(ch Change, f protocol.Fact) (protocol.Fact, error)
}

// Change is what a scan leaves behind besides its fact.
type Change struct {
	// Visits are the visits the scan changed, each whole as it now is.
	Visits []protocol.Visit
	// RestorePunch is set by a refusal that voids a punch: the person's
	// last punch goes back to Last, or to none when Last is nil.
	RestorePunch *PunchRestore
}

// PunchRestore is a person's last punch put back.
type PunchRestore struct {
	PersonID string
	Last     *protocol.Fact
}

// Relay frees the turnstile for one passage. *relay.Relay is one.
type Relay interface {
	// Start drives the relay active for d, the configured length when d
	// is 0, and returns once it is: finish waits out the pulse and drives
	// it inactive. An error from Start means no passage was freed; one
	// from finish, that the relay may be stuck active.
	Start(ctx context.Context, d time.Duration) (finish func() error, err error)
}

// Config is what a Gate needs.
type Config struct {
	// ID is the gate's gate_ ID.
	ID string
	// SiteID is the site_ ID of the site the edge serves: a token for
	// another site is refused wrong_gate.
	SiteID string
	// FailOpen makes the gate decide from a stale cache; by default a
	// stale cache refuses every scan (stale_cache).
	FailOpen bool
	Relay    Relay
	Store    Store
	// Passes serialises scans of one pass; gates of one site share it.
	// Nil gives the gate a set of its own.
	Passes *Passes
	// Logger receives one line per scan; nil means slog.Default().
	Logger *slog.Logger
}

// Gate decides and acts at one gate. It is safe for concurrent use.
type Gate struct {
	id, siteID string
	failOpen   bool
	relay      Relay
	store      Store
	passes     *Passes
	log        *slog.Logger
}

// New returns the gate cfg describes. It returns an error wrapping
// ErrConfig when an ID is not of its kind or Relay or Store is nil.
func New(cfg Config) (*Gate, error) {
	switch {
	case !ids.Valid(ids.Gate, cfg.ID):
		return nil, fmt.Errorf("%w: id %q is not a gate ID", ErrConfig, cfg.ID)
	case !ids.Valid(ids.Site, cfg.SiteID):
		return nil, fmt.Errorf("%w: site_id %q is not a site ID", ErrConfig, cfg.SiteID)
	case cfg.Relay == nil:
		return nil, fmt.Errorf("%w: gate %s has no relay", ErrConfig, cfg.ID)
	case cfg.Store == nil:
		return nil, fmt.Errorf("%w: gate %s has no store", ErrConfig, cfg.ID)
	}
	g := &Gate{id: cfg.ID, siteID: cfg.SiteID, failOpen: cfg.FailOpen, relay: cfg.Relay, store: cfg.Store, passes: cfg.Passes, log: cfg.Logger}
	if g.passes == nil {
		g.passes = new(Passes)
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	g.log = g.log.With("gate_id", g.id)
	return g, nil
}

// ID is the gate's ID.
func (g *Gate) ID() string { return g.id }

// Result is what a scan did.
type Result struct {
	GateID string
	// Admitted is true when the relay was pulsed for the visitor.
	Admitted bool
	// Kind is the fact recorded: check_in, check_out, re_entry, entered,
	// punch, passage (a Repeat) or refused; refused with reason record_failed
	// when the admit could not be recorded and nothing opened. Empty when
	// the scan was abandoned before a decision (Err says why).
	Kind protocol.FactKind
	// Reason is a refusal's reason: a passrule.Reason or one of
	// protocol.GateReasons. Empty for an admit.
	Reason string
	// VisitID is the visit checked in or out, the new visit of a
	// re-entry, or the visit a refusal judged; empty for a visit the edge
	// does not know. PassVisitID is the visit holding the pass, empty for
	// an invalid token. Both are empty for a personal pass.
	VisitID, PassVisitID string
	// PersonID is the holder of a personal pass (not for an invalid
	// token); Direction is a punch's, in or out.
	PersonID, Direction string
	// Repeat is true for a personal pass scanned again at the same gate
	// within PunchRepeat of the person's last punch there: the gate opened
	// again and recorded a passage, not a new punch.
	Repeat bool
	// FactID is the recorded fact's ID (after a relay failure, the
	// refusal's that voids the admit); empty when recording failed.
	FactID string
	// Decision is how long verifying the token and deciding took: the
	// path the latency budget is for, without the pulse and the write.
	Decision time.Duration
	// Err is a relay failure (ErrRelay), a failure to record (ErrRecord)
	// or the context's error when the scan waited for another scan of the
	// same pass and was abandoned.
	Err error
}

// Scan decides on the text a reader read at time at, records the outcome
// and, for an admit that was recorded, pulses the relay. ctx bounds only the wait for
// another scan of the same pass: once decided, the pulse and the record
// are not cut short by it (closing the relay ends a pulse). Problems are
// in the Result; Scan logs each scan once.
func (g *Gate) Scan(ctx context.Context, text string, at time.Time) Result {
	start := time.Now()
	text = strings.TrimSpace(text)
	st := g.store.State()
	if isPersonal(text) {
		return g.scanPerson(ctx, text, at, st, start)
	}
	claims, badge, err := g.verify(st, text, at)
	if err != nil {
		d := Decision{Kind: protocol.FactRefused, Reason: protocol.ReasonInvalidToken}
		res := Result{GateID: g.id, Decision: time.Since(start)}
		g.log.Warn("invalid scan", "length", len(text), "error", err.Error())
		return g.finish(d, res, at)
	}
	held, err := g.passes.lock(ctx, claims.VisitID)
	if err != nil {
		g.log.Warn("scan abandoned waiting for another scan of the pass", "pass_visit_id", claims.VisitID, "error", err.Error())
		return Result{GateID: g.id, PassVisitID: claims.VisitID, Err: err}
	}
	defer g.passes.unlock(claims.VisitID, held)
	d := g.decide(g.store.State(), &claims, badge, at)
	res := Result{GateID: g.id, Decision: time.Since(start)}
	if d.unknownGate {
		g.log.Warn("gate not in the cache; deciding as an entry gate")
	}
	if !d.Admit() {
		return g.finish(d, res, at)
	}
	return g.admit(ctx, d, res, at)
}

// admit records an admit and only then frees the passage. The fact and
// the visits it changed are durable (fsync'd) before the relay is
// commanded, so a power cut at any instant leaves either no opening, or
// an opening with its fact (or, between the two, a fact of an opening
// that did not happen: the safe side). An admit that cannot be recorded
// opens nothing: the scan is refused record_failed. A relay that fails
// after the record is compensated by a relay_failed refusal that voids
// the admit and puts the visits back as they were.
func (g *Gate) admit(ctx context.Context, d Decision, res Result, at time.Time) Result {
	res = g.finish(d, res, at)
	if res.FactID == "" {
		res.Admitted, res.Kind, res.Reason = false, protocol.FactRefused, protocol.ReasonRecordFailed
		return res
	}
	end, err := g.relay.Start(uncancelled(ctx), 0)
	if err != nil {
		admitID := res.FactID
		g.log.Error("relay failed after the admit was recorded; voiding it", "visit_id", d.VisitID, "pass_visit_id", d.PassVisitID,
			"person_id", d.PersonID, "fact_id", admitID, "error", err.Error())
		v := Decision{Kind: protocol.FactRefused, Reason: protocol.ReasonRelayFailed, VisitID: d.VisitID, PassVisitID: d.PassVisitID,
			PersonID: d.PersonID, Visits: d.undo, restore: d.undoPunch, voids: admitID}
		res = g.finish(v, Result{GateID: g.id, Decision: res.Decision}, at)
		res.Err = errors.Join(fmt.Errorf("%w: %w", ErrRelay, err), res.Err)
		return res
	}
	g.endPulse(end, &res)
	return res
}

// uncancelled is ctx without its cancellation: a context that cannot be
// cancelled already is used as it is, sparing WithoutCancel's allocation.
func uncancelled(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// endPulse waits out an admit's pulse; a relay that does not end it is
// reported with the admit.
func (g *Gate) endPulse(end func() error, res *Result) {
	if err := end(); err != nil {
		res.Err = errors.Join(res.Err, fmt.Errorf("%w: %w", ErrRelay, err))
		g.log.Error("relay did not end its pulse; the gate may be left open", "visit_id", res.VisitID, "person_id", res.PersonID,
			"error", err.Error())
	}
}

// finish records d and fills in res.
func (g *Gate) finish(d Decision, res Result, at time.Time) Result {
	res.Admitted, res.Kind, res.Reason = d.Admit(), d.Kind, d.Reason
	res.VisitID, res.PassVisitID = d.VisitID, d.PassVisitID
	res.PersonID, res.Direction = d.PersonID, d.Direction
	f := protocol.Fact{ID: ids.New(ids.Fact), Kind: d.Kind, At: at, GateID: g.id, VisitID: d.VisitID, PassVisitID: d.PassVisitID,
		Reason: d.Reason, PersonID: d.PersonID, Direction: d.Direction, Voids: d.voids}
	stored, err := g.store.Record(Change{Visits: d.Visits, RestorePunch: d.restore}, f)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrRecord, err)
		if res.Err == nil {
			res.Err = err
		}
		g.log.Error("scan not recorded", "kind", string(d.Kind), "reason", d.Reason, "admitted", res.Admitted,
			"visit_id", d.VisitID, "pass_visit_id", d.PassVisitID, "person_id", d.PersonID, "error", err.Error())
		return res
	}
	res.FactID = stored.ID
	// Attributes are made only for a handler that takes the line: boxed
	// into a slog call's arguments they would be garbage on every scan.
	if d.Reason != protocol.ReasonInvalidToken && d.Reason != protocol.ReasonRelayFailed && // both logged before
		g.log.Enabled(context.Background(), slog.LevelInfo) {
		g.log.LogAttrs(context.Background(), slog.LevelInfo, "scan", slog.String("kind", string(d.Kind)), slog.String("reason", d.Reason),
			slog.String("visit_id", d.VisitID), slog.String("pass_visit_id", d.PassVisitID), slog.String("person_id", d.PersonID),
			slog.String("direction", d.Direction), slog.String("fact_id", stored.ID), slog.Int64("decision_us", res.Decision.Microseconds()))
	}
	return res
}
