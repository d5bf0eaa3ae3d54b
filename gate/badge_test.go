package gate_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge/badgekey"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/shared/passrule"
	"github.com/svc-vms/svc/shared/passtoken"
	"github.com/svc-vms/svc/sync/protocol"
)

// berlin is the fixture's zone.
func berlin(tb testing.TB) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation(zone)
	require.NoError(tb, err)
	return loc
}

// newBadgeKey is an appliance's badge key, as svc-edge makes it.
func newBadgeKey(tb testing.TB) *badgekey.Key {
	tb.Helper()
	k, _, err := badgekey.Open(filepath.Join(tb.TempDir(), badgekey.FileName), nil)
	require.NoError(tb, err)
	return k
}

// certify puts k on the fixture's feed as the cloud certifies it: a
// badge key for siteID.
func (f *fixture) certify(k *badgekey.Key, siteID string, retired bool) {
	f.t.Helper()
	c := f.cache()
	key := protocol.Key{ID: k.ID(), Public: k.Public(), Kind: protocol.KeyBadge, SiteID: siteID, Retired: retired}
	_, err := c.Apply([]protocol.Change{{Seq: c.View().Seq() + 1, At: t0, Key: &key}})
	require.NoError(f.t, err)
}

// badge signs a walk-in badge for a new visit at the fixture's site,
// issued at at.
func (f *fixture) badge(k *badgekey.Key, at time.Time) (string, string) {
	f.t.Helper()
	id := ids.New(ids.Visit)
	tok, err := k.Sign(id, f.siteID, at, berlin(f.t))
	require.NoError(f.t, err)
	return id, tok
}

// A walk-in's badge opens its own site's gates by the token alone (the
// gate has never seen the visit, made at the desk while offline), until
// the end of the day at the site, and lets its holder out.
func TestScan_BadgeAdmitsAtItsSite(t *testing.T) {
	f := newFixture(t)
	k := newBadgeKey(t)
	f.certify(k, f.siteID, false)
	r, p := newRelay(t)
	entry, exit := f.newGate(f.entry, false, r), f.newGate(f.exit, false, r)
	id, tok := f.badge(k, t0.Add(-time.Hour))

	res := scan(entry, tok, t0)
	require.True(t, res.Admitted, "%+v", res)
	require.Equal(t, protocol.FactCheckIn, res.Kind)
	require.Equal(t, id, res.VisitID)
	require.Equal(t, id, res.PassVisitID)
	require.Equal(t, 1, p.pulses())
	v := f.visitOf(id)
	require.Equal(t, string(passrule.CheckedIn), v.Status)
	endOfDay := time.Date(2026, 3, 2, 23, 59, 59, 0, berlin(t)).UTC()
	require.Equal(t, endOfDay, *v.ExpectedUntil, "the badge's day, in Berlin")

	res = scan(entry, tok, t0.Add(time.Minute))
	require.Equal(t, protocol.ReasonAlreadyIn, res.Reason, "anti-passback holds for badges")
	res = scan(exit, tok, t0.Add(2*time.Minute))
	require.True(t, res.Admitted)
	require.Equal(t, protocol.FactCheckOut, res.Kind)
	require.Len(t, f.outbox(), 3)
}

// The badge's day ends at midnight at the site: a minute before it opens,
// at midnight it is expired, for a visit the gate never saw and for one
// it knows.
func TestScan_BadgeRefusedAfterItsDay(t *testing.T) {
	midnight := time.Date(2026, 3, 3, 0, 0, 0, 0, berlin(t))
	for _, known := range []bool{false, true} {
		f := newFixture(t)
		k := newBadgeKey(t)
		f.certify(k, f.siteID, false)
		require.NoError(t, f.cache().MarkSynced(midnight))
		r, _ := newRelay(t)
		g := f.newGate(f.entry, false, r)
		id, tok := f.badge(k, t0)
		if known {
			// The cloud's visit of the walk-in lasts three days; the badge
			// is still a day pass.
			v := visit(func(v *protocol.Visit) { v.ID, v.ForVisitID = id, id; v.ExpectedUntil = ptr(t0.Add(72 * time.Hour)) })
			f.put(v)
		}
		d := g.Decide(tok, midnight.Add(-time.Minute))
		require.True(t, d.Admit(), "known %v: %+v", known, d)
		res := scan(g, tok, midnight)
		require.False(t, res.Admitted, "known %v", known)
		require.Equal(t, string(passrule.Expired), res.Reason, "known %v", known)
	}
}

// Every other site refuses the badge as invalid_token: its feed never
// carries the key, and were the key there, it is certified for another
// site; nor does a key certified for that other site vouch for this
// site's badge.
func TestScan_BadgeRefusedAtAnotherSite(t *testing.T) {
	home := newFixture(t)
	k := newBadgeKey(t)
	home.certify(k, home.siteID, false)
	_, tok := home.badge(k, t0)

	away := newFixture(t)
	r, p := newRelay(t)
	g := away.newGate(away.entry, false, r)
	require.Equal(t, protocol.ReasonInvalidToken, scan(g, tok, t0).Reason, "the key unknown")

	away.certify(k, home.siteID, false) // another site's key, somehow here
	require.Equal(t, protocol.ReasonInvalidToken, scan(g, tok, t0).Reason, "a key certified for another site")

	other := newBadgeKey(t)
	away.certify(other, away.siteID, false)
	id := ids.New(ids.Visit)
	forHome, err := other.Sign(id, home.siteID, t0, berlin(t))
	require.NoError(t, err)
	require.Equal(t, protocol.ReasonInvalidToken, scan(g, forHome, t0).Reason, "this site's key signing for another site")
	require.Zero(t, p.pulses())
	_, ok := away.cache().View().Visit(id)
	require.False(t, ok, "nothing recorded of the visit")

	// The home site admits the same badge.
	hr, _ := newRelay(t)
	require.True(t, scan(home.newGate(home.entry, false, hr), tok, t0).Admitted)
}

// A badge key verifies badges only, and an organisation key never
// verifies a badge: the key kinds are kept apart.
func TestScan_BadgeKeyVerifiesBadgesOnly(t *testing.T) {
	f := newFixture(t)
	k := newBadgeKey(t)
	f.certify(k, f.siteID, false)
	r, p := newRelay(t)
	g := f.newGate(f.entry, false, r)

	// The badge key's private half, as an ordinary key under its own ID.
	priv := keyOf(t, k)
	v := visit()
	require.Equal(t, protocol.ReasonInvalidToken, scan(g, f.sign(priv, f.claims(v)), t0).Reason, "a visit pass")
	person := protocol.Person{ID: ids.New(ids.Person), Active: true, PassIssuedAt: t0.Unix()}
	ptok, err := passtoken.SignPerson(priv, passtoken.PersonClaims{PersonID: person.ID, IssuedAt: t0})
	require.NoError(t, err)
	require.Equal(t, protocol.ReasonInvalidToken, scan(g, ptok, t0).Reason, "a personal pass")

	// The organisation's key signing a badge.
	btok, err := passtoken.SignBadge(f.key, passtoken.BadgeClaims{VisitID: v.ID, SiteID: f.siteID, IssuedAt: t0, NotAfter: t0.Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, protocol.ReasonInvalidToken, scan(g, btok, t0).Reason, "an organisation-signed badge")
	require.Zero(t, p.pulses())
	require.Len(t, f.outbox(), 3, "each refusal recorded")
}

// keyOf is the badge key as a passtoken.Key, read from its file.
func keyOf(tb testing.TB, k *badgekey.Key) passtoken.Key {
	tb.Helper()
	raw, err := readKeyFile(k.Path())
	require.NoError(tb, err)
	pk, err := passtoken.BadgeKey(raw)
	require.NoError(tb, err)
	require.Equal(tb, k.ID(), pk.ID)
	return pk
}

// What the cache knows of the visit is newer than the badge and wins: a
// visit checked out at the desk or cancelled in the cloud stops it, a
// walk-in checked in at the desk is let out, and a revoked edge's key
// (retired on the feed) verifies nothing.
func TestScan_BadgeCacheWins(t *testing.T) {
	f := newFixture(t)
	k := newBadgeKey(t)
	f.certify(k, f.siteID, false)
	r, _ := newRelay(t)
	entry, exit := f.newGate(f.entry, false, r), f.newGate(f.exit, false, r)
	walkIn := func(mod func(*protocol.Visit)) (protocol.Visit, string) {
		id, tok := f.badge(k, t0.Add(-time.Hour))
		v := visit(func(v *protocol.Visit) {
			v.ID, v.ForVisitID, v.ExpectedAt, v.ExpectedUntil = id, id, nil, nil
			v.Status, v.CheckedInAt, v.Uses = string(passrule.CheckedIn), ptr(t0.Add(-time.Hour)), 1
			mod(v)
		})
		f.put(v)
		return v, tok
	}

	_, tok := walkIn(func(v *protocol.Visit) {})
	require.Equal(t, protocol.ReasonAlreadyIn, scan(entry, tok, t0).Reason, "checked in at the desk")
	res := scan(exit, tok, t0)
	require.Equal(t, protocol.FactCheckOut, res.Kind, "let out")
	require.Equal(t, string(passrule.Ended), scan(entry, tok, t0.Add(time.Minute)).Reason, "signed out: no re-entry on a badge")

	_, tok = walkIn(func(v *protocol.Visit) {
		v.Status, v.CheckedOutAt = string(passrule.CheckedOut), ptr(t0.Add(-time.Minute))
	})
	require.Equal(t, string(passrule.Ended), scan(entry, tok, t0).Reason, "checked out at the desk")

	_, tok = walkIn(func(v *protocol.Visit) { v.Status, v.CheckedInAt, v.Uses = string(passrule.Cancelled), nil, 0 })
	require.Equal(t, string(passrule.Ended), scan(entry, tok, t0).Reason, "cancelled in the cloud")

	_, tok = walkIn(func(v *protocol.Visit) {
		v.Revoked = true
		v.Status, v.CheckedInAt, v.Uses = string(passrule.Expected), nil, 0
	})
	require.Equal(t, string(passrule.Ended), scan(entry, tok, t0).Reason, "pass revoked in the cloud")

	_, fresh := f.badge(k, t0)
	require.True(t, entry.Decide(fresh, t0).Admit())
	f.certify(k, f.siteID, true)
	require.Equal(t, protocol.ReasonInvalidToken, scan(entry, fresh, t0).Reason, "the edge revoked: its key retired")
}

// readKeyFile reads the private key in a badge key file, as an attacker
// holding a copy of it would.
func readKeyFile(path string) (ed25519.PrivateKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(raw)
	if b == nil {
		return nil, errors.New("no PEM block")
	}
	key, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, err
	}
	priv, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, errors.New("not an Ed25519 key")
	}
	return priv, nil
}
