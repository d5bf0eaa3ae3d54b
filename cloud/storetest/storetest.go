// Package storetest is the contract every cloud.Store passes. cloud/sqlite
// and cloud/postgres call Run from their tests, so both engines are held to
// what the comments of the Store interface promise: tenant isolation,
// round-tripped fields, newest-first keyset pagination, transactional
// updates, visits and bookings written together with what goes with them
// (the audit trail among it), slots that never take more bookings than
// their capacity, each site's change feed (written with the changes it
// describes, without gaps, published once and in order, every person on
// every site of the tenant), edge facts
// applied once, edges, enrolments, idempotency keys, request counters and
// server secrets.
//
// It may import cloud, shared/..., sync/protocol and testify.
package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/ids"
)

// Run runs the contract against stores made by newStore, which returns a
// fresh, empty, migrated store on each call and registers its own cleanup.
// Every subtest gets its own store.
func Run(t *testing.T, newStore func(t *testing.T) cloud.Store) {
	for _, g := range groups() {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					tc.run(t, newEnv(t, newStore))
				})
			}
		})
	}
}

type test struct {
	name string
	run  func(t *testing.T, e *env)
}

type group struct {
	name  string
	tests []test
}

func groups() []group {
	return []group{
		{"Organisations", []test{
			{"CreateAndGet", testOrganisationCreateAndGet},
			{"Unknown", testOrganisationUnknown},
		}},
		{"Keys", []test{
			{"CreateAndKeyByHash", testKeyCreateAndKeyByHash},
			{"PublishableHasNoScopes", testKeyPublishableHasNoScopes},
			{"UnknownHash", testKeyUnknownHash},
			{"DuplicateHash", testKeyDuplicateHash},
			{"Revoke", testKeyRevoke},
			{"RevokeTwiceKeepsFirst", testKeyRevokeTwiceKeepsFirst},
			{"RevokeUnknownOrOtherOrg", testKeyRevokeUnknownOrOtherOrg},
		}},
		{"Sites", append([]test{
			{"CreateAndGet", testSiteCreateAndGet},
			{"Update", testSiteUpdate},
			{"UpdateAborts", testSiteUpdateAborts},
			{"UpdateUnknown", testSiteUpdateUnknown},
			{"TenantIsolation", testSiteTenantIsolation},
		}, paginationTests(sitePager)...)},
		{"Gates", append([]test{
			{"CreateAndGet", testGateCreateAndGet},
			{"CreateNeedsSiteOfTenant", testGateCreateNeedsSite},
			{"Update", testGateUpdate},
			{"UpdateAborts", testGateUpdateAborts},
			{"UpdateUnknown", testGateUpdateUnknown},
			{"ListFilters", testGateListFilters},
			{"TenantIsolation", testGateTenantIsolation},
		}, paginationTests(gatePager)...)},
		{"People", append([]test{
			{"CreateAndGet", testPersonCreateAndGet},
			{"PeopleByIDs", testPeopleByIDs},
			{"Update", testPersonUpdate},
			{"UpdateAborts", testPersonUpdateAborts},
			{"UpdateUnknown", testPersonUpdateUnknown},
			{"EmailUniqueCaseInsensitive", testPersonEmailUnique},
			{"EmailUniquePerTenant", testPersonEmailUniquePerTenant},
			{"EmptyEmailsDoNotCollide", testPersonEmptyEmails},
			{"UpdateEmailConflict", testPersonUpdateEmailConflict},
			{"ListFilters", testPersonListFilters},
			{"ListQueryLiteral", testPersonListQueryLiteral},
			{"ListQueryFollowsUpdates", testPersonListQueryFollowsUpdates},
			{"TenantIsolation", testPersonTenantIsolation},
		}, paginationTests(personPager)...)},
		{"Teams", append([]test{
			{"CreateAndGet", testTeamCreateAndGet},
			{"CreateNeedsMembersOfTenant", testTeamCreateNeedsMembers},
			{"MembersFollowPeople", testTeamMembersFollowPeople},
			{"ListCarriesEachTeamsMembers", testTeamListMembers},
			{"Update", testTeamUpdate},
			{"UpdateAborts", testTeamUpdateAborts},
			{"UpdateUnknown", testTeamUpdateUnknown},
			{"ListFilters", testTeamListFilters},
			{"ListQueryLiteral", testTeamListQueryLiteral},
			{"ListQueryFollowsUpdates", testTeamListQueryFollowsUpdates},
			{"TenantIsolation", testTeamTenantIsolation},
		}, paginationTests(teamPager)...)},
		{"VisitTypes", append([]test{
			{"PutAndGet", testVisitTypePutAndGet},
			{"ReplaceKeepsCreatedAt", testVisitTypeReplaceKeepsCreatedAt},
			{"PublicFilter", testVisitTypePublicFilter},
			{"TenantIsolation", testVisitTypeTenantIsolation},
		}, paginationTests(visitTypePager)...)},
		{"Visitors", []test{
			{"CreateAndGet", testVisitorCreateAndGet},
			{"FindByEmailCaseInsensitive", testVisitorFindByEmail},
			{"FindByPhone", testVisitorFindByPhone},
			{"FindNewestWins", testVisitorFindNewestWins},
			{"FindNone", testVisitorFindNone},
			{"FindSkipsSelfRegistered", testVisitorFindSkipsSelfRegistered},
			{"Update", testVisitorUpdate},
			{"UpdateAborts", testVisitorUpdateAborts},
			{"UpdateUnknown", testVisitorUpdateUnknown},
			{"TenantIsolation", testVisitorTenantIsolation},
			{"Erase", testVisitorErase},
			{"EraseUnknown", testVisitorEraseUnknown},
		}},
		{"Visits", append([]test{
			{"CreateAndGet", testVisitCreateAndGet},
			{"CreateWrites", testVisitCreateWrites},
			{"CreateAllOrNothing", testVisitCreateAllOrNothing},
			{"Update", testVisitUpdate},
			{"UpdateAborts", testVisitUpdateAborts},
			{"UpdateWrites", testVisitUpdateWrites},
			{"UpdateUnknown", testVisitUpdateUnknown},
			{"UpdateConcurrent", testVisitUpdateConcurrent},
			{"ListFilters", testVisitListFilters},
			{"ListHostPages", testVisitListHostPages},
			{"ListHostFilter", testVisitListHostFilter},
			{"ListWaitingWith", testVisitListWaitingWith},
			{"TenantIsolation", testVisitTenantIsolation},
			{"VisitorOfTenant", testVisitVisitorOfTenant},
		}, paginationTests(visitPager)...)},
		{"BookingTypes", append([]test{
			{"CreateAndGet", testBookingTypeCreateAndGet},
			{"Update", testBookingTypeUpdate},
			{"UpdateAborts", testBookingTypeUpdateAborts},
			{"UpdateUnknown", testBookingTypeUpdateUnknown},
			{"ListFilters", testBookingTypeListFilters},
			{"TenantIsolation", testBookingTypeTenantIsolation},
		}, paginationTests(bookingTypePager)...)},
		{"Bookings", append([]test{
			{"CreateAndGet", testBookingCreateAndGet},
			{"CreateWrites", testBookingCreateWrites},
			{"CreateAllOrNothing", testBookingCreateAllOrNothing},
			{"Capacity", testBookingCapacity},
			{"CapacityReleased", testBookingCapacityReleased},
			{"CreateConcurrent", testBookingCreateConcurrent},
			{"Update", testBookingUpdate},
			{"UpdateAborts", testBookingUpdateAborts},
			{"UpdateWrites", testBookingUpdateWrites},
			{"UpdateCapacity", testBookingUpdateCapacity},
			{"UpdateConcurrent", testBookingUpdateConcurrent},
			{"UpdateConcurrentMoves", testBookingUpdateConcurrentMoves},
			{"UpdateUnknown", testBookingUpdateUnknown},
			{"ListFilters", testBookingListFilters},
			{"TenantIsolation", testBookingTenantIsolation},
			{"VisitorOfTenant", testBookingVisitorOfTenant},
			{"SlotUse", testBookingSlotUse},
			{"Expire", testBookingExpire},
		}, paginationTests(bookingPager)...)},
		{"AuditEvents", append([]test{
			{"CreateWrites", testAuditCreateWrites},
			{"UpdateWrites", testAuditUpdateWrites},
			{"CreateAllOrNothing", testAuditCreateAllOrNothing},
			{"UpdateAllOrNothing", testAuditUpdateAllOrNothing},
			{"ListFilters", testAuditListFilters},
			{"TenantIsolation", testAuditTenantIsolation},
		}, paginationTests(auditPager)...)},
		{"Messages", append([]test{
			{"ListAndFilter", testMessageListAndFilter},
			{"TenantIsolation", testMessageTenantIsolation},
		}, paginationTests(messagePager)...)},
		{"PassKeys", []test{
			{"CreateAndList", testPassKeyCreateAndList},
			{"TenantIsolation", testPassKeyTenantIsolation},
			{"PassesUntil", testPassesUntil},
		}},
		{"Feed", feedTests()},
		{"WaitReminders", reminderTests()},
		{"Facts", factTests()},
		{"Edges", edgeTests()},
		{"Enrolments", enrolmentTests()},
		{"Releases", releaseTests()},
		{"Concurrency", []test{
			{"Writers", testConcurrentWriters},
			{"UpdatePersonNoLostUpdates", testConcurrentUpdatePerson},
		}},
		{"Idempotency", idempotencyTests()},
		{"Atomic", atomicTests()},
		{"Outages", outageTests()},
		{"Ready", readyTests()},
		{"Stats", statsTests()},
		{"Replicas", []test{
			{"PutListForget", testReplicasPutListForget},
			{"JoinRefusesOtherLimits", testReplicasJoinRefusesOtherLimits},
		}},
		{"RequestCounts", []test{
			{"CountsUp", testCountsUp},
			{"IndependentWindowsAndTenants", testCountsIndependent},
			{"Concurrent", testCountsConcurrent},
			{"Purge", testCountsPurge},
		}},
		{"Secrets", []test{
			{"FirstValueWins", testSecretFirstValueWins},
			{"ConcurrentFirstCalls", testSecretConcurrent},
		}},
	}
}

// env is one subtest's store with two organisations and three tenants.
type env struct {
	s          cloud.Store
	org1, org2 cloud.Organisation
	a, b, c    cloud.Tenant // org1 live, org1 test, org2 live
	now        time.Time    // start of the test, UTC, to the microsecond

	mu    sync.Mutex
	clock time.Time
}

func newEnv(t *testing.T, newStore func(t *testing.T) cloud.Store) *env {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Microsecond)
	e := &env{s: newStore(t), now: now, clock: now.Add(-time.Hour)}
	e.org1 = cloud.Organisation{ID: ids.New(ids.Organisation), Name: "Org One", Plan: cloud.PlanPro,
		CreatedAt: now.Add(-2 * time.Hour), UpdatedAt: now.Add(-90 * time.Minute)}
	e.org2 = cloud.Organisation{ID: ids.New(ids.Organisation), Name: "Org Two", Plan: cloud.PlanFree,
		CreatedAt: now.Add(-3 * time.Hour), UpdatedAt: now.Add(-3 * time.Hour)}
	require.NoError(t, e.s.CreateOrganisation(t.Context(), e.org1))
	require.NoError(t, e.s.CreateOrganisation(t.Context(), e.org2))
	e.a = cloud.Tenant{OrgID: e.org1.ID, Mode: cloud.ModeLive}
	e.b = cloud.Tenant{OrgID: e.org1.ID, Mode: cloud.ModeTest}
	e.c = cloud.Tenant{OrgID: e.org2.ID, Mode: cloud.ModeLive}
	return e
}

// tick returns a time later than every tick before it. The odd microsecond
// makes a store that drops sub-second precision fail.
func (e *env) tick() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.clock = e.clock.Add(time.Second + time.Microsecond)
	return e.clock
}

var errAbort = errors.New("storetest: fn aborts")

// --- builders ---------------------------------------------------------------

func (e *env) newSite(t testing.TB, tn cloud.Tenant, opts ...func(*cloud.Site)) cloud.Site {
	t.Helper()
	at := e.tick()
	s := cloud.Site{ID: ids.New(ids.Site), Tenant: tn, Name: "Site", Timezone: "Europe/London",
		CreatedAt: at, UpdatedAt: at}
	for _, o := range opts {
		o(&s)
	}
	require.NoError(t, e.s.CreateSite(t.Context(), s))
	return s
}

func (e *env) newGate(t testing.TB, tn cloud.Tenant, siteID string, opts ...func(*cloud.Gate)) cloud.Gate {
	t.Helper()
	at := e.tick()
	g := cloud.Gate{ID: ids.New(ids.Gate), Tenant: tn, SiteID: siteID, Name: "Gate",
		Direction: cloud.DirectionBoth, CreatedAt: at, UpdatedAt: at}
	for _, o := range opts {
		o(&g)
	}
	require.NoError(t, e.s.CreateGate(t.Context(), g))
	return g
}

func (e *env) newPerson(t testing.TB, tn cloud.Tenant, opts ...func(*cloud.Person)) cloud.Person {
	t.Helper()
	at := e.tick()
	p := cloud.Person{ID: ids.New(ids.Person), Tenant: tn, Name: "Person", Active: true,
		PassIssuedAt: at.Truncate(time.Second), CreatedAt: at, UpdatedAt: at}
	for _, o := range opts {
		o(&p)
	}
	require.NoError(t, e.s.CreatePerson(t.Context(), p))
	return p
}

func (e *env) newTeam(t testing.TB, tn cloud.Tenant, opts ...func(*cloud.Team)) cloud.Team {
	t.Helper()
	at := e.tick()
	tm := cloud.Team{ID: ids.New(ids.Team), Tenant: tn, Name: "Team", VisitorsCanChoose: true,
		MemberIDs: []string{}, CreatedAt: at, UpdatedAt: at}
	for _, o := range opts {
		o(&tm)
	}
	require.NoError(t, e.s.CreateTeam(t.Context(), tm))
	return tm
}

func (e *env) newKey(t testing.TB, tn cloud.Tenant, kind cloud.KeyKind, scopes []cloud.Scope) cloud.APIKey {
	t.Helper()
	secret := cloud.NewKeySecret(kind, tn.Mode)
	k := cloud.APIKey{ID: ids.New(ids.Key), Tenant: tn, Kind: kind, Scopes: scopes,
		Hash: cloud.HashKey(secret), Last4: secret[len(secret)-4:], CreatedAt: e.tick()}
	require.NoError(t, e.s.CreateKey(t.Context(), k))
	return k
}

func named[T cloud.Site | cloud.Gate | cloud.Person | cloud.Team](name string) func(*T) {
	return func(x *T) {
		switch v := any(x).(type) {
		case *cloud.Site:
			v.Name = name
		case *cloud.Gate:
			v.Name = name
		case *cloud.Person:
			v.Name = name
		case *cloud.Team:
			v.Name = name
		}
	}
}

// --- comparisons ------------------------------------------------------------

// The contract is times equal to the microsecond, not a particular
// location: compare in UTC. Empty and nil slices are the same list.

func utcPtr(p *time.Time) *time.Time {
	if p == nil {
		return nil
	}
	u := p.UTC()
	return &u
}

func normOrg(o cloud.Organisation) cloud.Organisation {
	o.CreatedAt, o.UpdatedAt = o.CreatedAt.UTC(), o.UpdatedAt.UTC()
	return o
}

func normSite(s cloud.Site) cloud.Site {
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	return s
}

func normGate(g cloud.Gate) cloud.Gate {
	g.CreatedAt, g.UpdatedAt = g.CreatedAt.UTC(), g.UpdatedAt.UTC()
	return g
}

func normPerson(p cloud.Person) cloud.Person {
	p.CreatedAt, p.UpdatedAt, p.PassIssuedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC(), p.PassIssuedAt.UTC()
	p.DeactivatedAt = utcPtr(p.DeactivatedAt)
	return p
}

func normTeam(tm cloud.Team) cloud.Team {
	tm.CreatedAt, tm.UpdatedAt = tm.CreatedAt.UTC(), tm.UpdatedAt.UTC()
	if len(tm.MemberIDs) == 0 {
		tm.MemberIDs = nil
	}
	if len(tm.Members) == 0 {
		tm.Members = nil
	}
	return tm
}

func requireSite(t testing.TB, want, got cloud.Site) {
	t.Helper()
	require.Equal(t, normSite(want), normSite(got))
}

func requireGate(t testing.TB, want, got cloud.Gate) {
	t.Helper()
	require.Equal(t, normGate(want), normGate(got))
}

func requirePerson(t testing.TB, want, got cloud.Person) {
	t.Helper()
	require.Equal(t, normPerson(want), normPerson(got))
}

// requireTeam compares a team as stored with members as they are now.
func requireTeam(t testing.TB, want cloud.Team, members []cloud.Person, got cloud.Team) {
	t.Helper()
	want.Members = nil
	for _, p := range members {
		want.Members = append(want.Members, cloud.Member{ID: p.ID, Name: p.Name, JobTitle: p.JobTitle, Active: p.Active})
	}
	require.Equal(t, normTeam(want), normTeam(got))
}

func requireKey(t testing.TB, want, got cloud.APIKey) {
	t.Helper()
	require.Equal(t, want.ID, got.ID)
	require.Equal(t, want.Tenant, got.Tenant)
	require.Equal(t, want.Kind, got.Kind)
	require.Equal(t, want.Hash, got.Hash)
	require.Equal(t, want.Last4, got.Last4)
	require.True(t, want.CreatedAt.Equal(got.CreatedAt), "created at: want %v, got %v", want.CreatedAt, got.CreatedAt)
	if len(want.Scopes) == 0 {
		require.Empty(t, got.Scopes)
	} else {
		require.ElementsMatch(t, want.Scopes, got.Scopes)
	}
	require.Equal(t, utcPtr(want.RevokedAt), utcPtr(got.RevokedAt))
}

// assertError reports a missing error without stopping, so every case of
// a table is tried.
func assertError(t testing.TB, err error, name string) bool {
	t.Helper()
	if err == nil {
		t.Errorf("%s: an error is expected but got nil", name)
		return false
	}
	return true
}

func requireNotFound(t testing.TB, err error, msgAndArgs ...any) {
	t.Helper()
	require.ErrorIs(t, err, cloud.ErrNotFound, msgAndArgs...)
}

func requireEmailConflict(t testing.TB, err error) {
	t.Helper()
	require.Error(t, err)
	var ce *cloud.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "email", ce.Field)
	require.ErrorIs(t, err, cloud.ErrConflict)
}

// --- ordering and walking lists --------------------------------------------

// row is where a listed object sits in newest-first order.
type row struct {
	ID        string
	CreatedAt time.Time
}

func siteRow(s cloud.Site) row     { return row{s.ID, s.CreatedAt.UTC()} }
func gateRow(g cloud.Gate) row     { return row{g.ID, g.CreatedAt.UTC()} }
func personRow(p cloud.Person) row { return row{p.ID, p.CreatedAt.UTC()} }
func teamRow(tm cloud.Team) row    { return row{tm.ID, tm.CreatedAt.UTC()} }

func sortNewest(rows []row) {
	slices.SortFunc(rows, func(x, y row) int {
		if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(y.ID, x.ID)
	})
}

func rowIDs(rows []row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// newestIDs is the order a list must return xs in.
func newestIDs[T any](key func(T) row, xs ...T) []string {
	rows := make([]row, len(xs))
	for i, x := range xs {
		rows[i] = key(x)
	}
	sortNewest(rows)
	return rowIDs(rows)
}

func idsOf[T any](key func(T) row, xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = key(x).ID
	}
	return out
}

// walk follows a list to its end, limit rows a page.
func walk[T any](t testing.TB, limit int, key func(T) row, list func(p cloud.Page) ([]T, bool, error)) []T {
	t.Helper()
	var all []T
	p := cloud.Page{Limit: limit}
	for range 1000 {
		page, more, err := list(p)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), limit, "page longer than its limit")
		all = append(all, page...)
		if !more {
			return all
		}
		require.NotEmpty(t, page, "a page says more rows follow but holds none")
		last := key(page[len(page)-1])
		p.After = &cloud.Position{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	require.FailNow(t, "list never reported its last page")
	return nil
}

func (e *env) listSites(t testing.TB, tn cloud.Tenant) []cloud.Site {
	t.Helper()
	return walk(t, 2, siteRow, func(p cloud.Page) ([]cloud.Site, bool, error) {
		return e.s.ListSites(t.Context(), tn, cloud.SiteFilter{}, p)
	})
}

func (e *env) listGates(t testing.TB, tn cloud.Tenant, f cloud.GateFilter) []cloud.Gate {
	t.Helper()
	return walk(t, 2, gateRow, func(p cloud.Page) ([]cloud.Gate, bool, error) {
		return e.s.ListGates(t.Context(), tn, f, p)
	})
}

func (e *env) listPeople(t testing.TB, tn cloud.Tenant, f cloud.PersonFilter) []cloud.Person {
	t.Helper()
	return walk(t, 2, personRow, func(p cloud.Page) ([]cloud.Person, bool, error) {
		return e.s.ListPeople(t.Context(), tn, f, p)
	})
}

func (e *env) listTeams(t testing.TB, tn cloud.Tenant, f cloud.TeamFilter) []cloud.Team {
	t.Helper()
	return walk(t, 2, teamRow, func(p cloud.Page) ([]cloud.Team, bool, error) {
		return e.s.ListTeams(t.Context(), tn, f, p)
	})
}

func ptr[T any](v T) *T { return &v }

// --- organisations ----------------------------------------------------------

func testOrganisationCreateAndGet(t *testing.T, e *env) {
	for _, want := range []cloud.Organisation{e.org1, e.org2} {
		got, err := e.s.Organisation(t.Context(), want.ID)
		require.NoError(t, err)
		require.Equal(t, normOrg(want), normOrg(got))
	}
}

func testOrganisationUnknown(t *testing.T, e *env) {
	_, err := e.s.Organisation(t.Context(), ids.New(ids.Organisation))
	requireNotFound(t, err)
}

// --- keys -------------------------------------------------------------------

func testKeyCreateAndKeyByHash(t *testing.T, e *env) {
	k1 := e.newKey(t, e.a, cloud.KindSecret, []cloud.Scope{cloud.ScopeSitesRead, cloud.ScopePeopleWrite, cloud.ScopeOrganisationRead})
	k2 := e.newKey(t, e.b, cloud.KindSecret, cloud.Scopes)
	k3 := e.newKey(t, e.c, cloud.KindSecret, []cloud.Scope{cloud.ScopeAuditRead})
	for _, tc := range []struct {
		key  cloud.APIKey
		plan cloud.Plan
	}{{k1, cloud.PlanPro}, {k2, cloud.PlanPro}, {k3, cloud.PlanFree}} {
		p, err := e.s.KeyByHash(t.Context(), tc.key.Hash)
		require.NoError(t, err)
		requireKey(t, tc.key, p.Key)
		require.Len(t, p.Key.Scopes, len(tc.key.Scopes))
		require.Equal(t, tc.plan, p.Plan)
		require.Equal(t, tc.key.Tenant, p.Tenant())
	}
}

func testKeyPublishableHasNoScopes(t *testing.T, e *env) {
	k := e.newKey(t, e.b, cloud.KindPublishable, nil)
	p, err := e.s.KeyByHash(t.Context(), k.Hash)
	require.NoError(t, err)
	requireKey(t, k, p.Key)
	require.Equal(t, cloud.KindPublishable, p.Key.Kind)
	require.Empty(t, p.Key.Scopes)
	require.Equal(t, cloud.PlanPro, p.Plan)
}

func testKeyUnknownHash(t *testing.T, e *env) {
	e.newKey(t, e.a, cloud.KindSecret, cloud.Scopes)
	_, err := e.s.KeyByHash(t.Context(), cloud.HashKey(cloud.NewKeySecret(cloud.KindSecret, cloud.ModeLive)))
	requireNotFound(t, err)
}

func testKeyDuplicateHash(t *testing.T, e *env) {
	k := e.newKey(t, e.a, cloud.KindSecret, cloud.Scopes)
	dup := k
	dup.ID = ids.New(ids.Key)
	dup.Tenant = e.c
	require.Error(t, e.s.CreateKey(t.Context(), dup), "a second key with the same hash")
	p, err := e.s.KeyByHash(t.Context(), k.Hash)
	require.NoError(t, err)
	requireKey(t, k, p.Key)
}

func testKeyRevoke(t *testing.T, e *env) {
	k := e.newKey(t, e.a, cloud.KindSecret, cloud.Scopes)
	kTest := e.newKey(t, e.b, cloud.KindPublishable, nil)
	other := e.newKey(t, e.a, cloud.KindSecret, cloud.Scopes)

	at := e.tick()
	require.NoError(t, e.s.RevokeKey(t.Context(), e.org1.ID, k.ID, at))
	p, err := e.s.KeyByHash(t.Context(), k.Hash)
	require.NoError(t, err, "a revoked key is still found")
	require.NotNil(t, p.Key.RevokedAt)
	require.True(t, at.Equal(*p.Key.RevokedAt), "revoked at: want %v, got %v", at, *p.Key.RevokedAt)
	k.RevokedAt = &at
	requireKey(t, k, p.Key)

	// Keys belong to the organisation, whichever mode they are for.
	atTest := e.tick()
	require.NoError(t, e.s.RevokeKey(t.Context(), e.org1.ID, kTest.ID, atTest))
	p, err = e.s.KeyByHash(t.Context(), kTest.Hash)
	require.NoError(t, err)
	require.NotNil(t, p.Key.RevokedAt)
	require.True(t, atTest.Equal(*p.Key.RevokedAt))

	p, err = e.s.KeyByHash(t.Context(), other.Hash)
	require.NoError(t, err)
	require.Nil(t, p.Key.RevokedAt, "revoking one key revoked another")
}

func testKeyRevokeTwiceKeepsFirst(t *testing.T, e *env) {
	k := e.newKey(t, e.a, cloud.KindSecret, cloud.Scopes)
	first := e.tick()
	second := e.tick()
	require.NoError(t, e.s.RevokeKey(t.Context(), e.org1.ID, k.ID, first))
	require.NoError(t, e.s.RevokeKey(t.Context(), e.org1.ID, k.ID, second))
	p, err := e.s.KeyByHash(t.Context(), k.Hash)
	require.NoError(t, err)
	require.NotNil(t, p.Key.RevokedAt)
	require.True(t, first.Equal(*p.Key.RevokedAt), "revoked at: want the first time %v, got %v", first, *p.Key.RevokedAt)
}

func testKeyRevokeUnknownOrOtherOrg(t *testing.T, e *env) {
	k := e.newKey(t, e.a, cloud.KindSecret, cloud.Scopes)
	requireNotFound(t, e.s.RevokeKey(t.Context(), e.org1.ID, ids.New(ids.Key), e.tick()), "unknown key")
	requireNotFound(t, e.s.RevokeKey(t.Context(), e.org2.ID, k.ID, e.tick()), "another organisation's key")
	p, err := e.s.KeyByHash(t.Context(), k.Hash)
	require.NoError(t, err)
	require.Nil(t, p.Key.RevokedAt, "another organisation revoked the key")
}

// --- sites ------------------------------------------------------------------

func testSiteCreateAndGet(t *testing.T, e *env) {
	bare := e.newSite(t, e.a, func(s *cloud.Site) {
		s.Name, s.Timezone = "Bare", "UTC"
		s.UpdatedAt = s.CreatedAt.Add(1500 * time.Microsecond)
	})
	full := e.newSite(t, e.a, func(s *cloud.Site) {
		s.Name, s.Timezone = "Head Office", "America/New_York"
		s.Address = &cloud.Address{Line1: "1 Main St", Line2: "Floor 2", City: "New York", Region: "NY",
			PostalCode: "10001", Country: "US"}
	})
	partial := e.newSite(t, e.a, func(s *cloud.Site) {
		s.Name = "Depot"
		s.Address = &cloud.Address{Line1: "Unit 4", Country: "GB"}
	})
	for _, want := range []cloud.Site{bare, full, partial} {
		got, err := e.s.Site(t.Context(), e.a, want.ID)
		require.NoError(t, err)
		requireSite(t, want, got)
	}
	_, err := e.s.Site(t.Context(), e.a, ids.New(ids.Site))
	requireNotFound(t, err)
}

func testSiteUpdate(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	want := s
	want.Name, want.Timezone = "Renamed", "Asia/Tokyo"
	want.Address = &cloud.Address{Line1: "2 Side Rd", City: "Tokyo", Country: "JP"}
	want.UpdatedAt = e.tick()
	got, err := e.s.UpdateSite(t.Context(), e.a, s.ID, func(x *cloud.Site) error {
		requireSite(t, s, *x)
		x.Name, x.Timezone, x.Address, x.UpdatedAt = want.Name, want.Timezone, want.Address, want.UpdatedAt
		return nil
	})
	require.NoError(t, err)
	requireSite(t, want, got)
	got, err = e.s.Site(t.Context(), e.a, s.ID)
	require.NoError(t, err)
	requireSite(t, want, got)

	// Back to no address.
	want.Address = nil
	want.UpdatedAt = e.tick()
	_, err = e.s.UpdateSite(t.Context(), e.a, s.ID, func(x *cloud.Site) error {
		x.Address, x.UpdatedAt = nil, want.UpdatedAt
		return nil
	})
	require.NoError(t, err)
	got, err = e.s.Site(t.Context(), e.a, s.ID)
	require.NoError(t, err)
	requireSite(t, want, got)
}

func testSiteUpdateAborts(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	_, err := e.s.UpdateSite(t.Context(), e.a, s.ID, func(x *cloud.Site) error {
		x.Name = "Changed"
		x.Address = &cloud.Address{Line1: "x", Country: "GB"}
		x.UpdatedAt = e.tick()
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	got, err := e.s.Site(t.Context(), e.a, s.ID)
	require.NoError(t, err)
	requireSite(t, s, got)
}

func testSiteUpdateUnknown(t *testing.T, e *env) {
	e.newSite(t, e.a)
	_, err := e.s.UpdateSite(t.Context(), e.a, ids.New(ids.Site), func(x *cloud.Site) error {
		x.Name = "x"
		return nil
	})
	requireNotFound(t, err)
}

func testSiteTenantIsolation(t *testing.T, e *env) {
	s := e.newSite(t, e.a, named[cloud.Site]("A"))
	sb := e.newSite(t, e.b, named[cloud.Site]("B"))
	sc := e.newSite(t, e.c, named[cloud.Site]("C"))
	for _, other := range []cloud.Tenant{e.b, e.c} {
		_, err := e.s.Site(t.Context(), other, s.ID)
		requireNotFound(t, err, "get in %v", other)
		_, err = e.s.UpdateSite(t.Context(), other, s.ID, func(x *cloud.Site) error {
			x.Name = "Stolen"
			return nil
		})
		requireNotFound(t, err, "update in %v", other)
	}
	got, err := e.s.Site(t.Context(), e.a, s.ID)
	require.NoError(t, err)
	requireSite(t, s, got)
	require.Equal(t, []string{s.ID}, idsOf(siteRow, e.listSites(t, e.a)))
	require.Equal(t, []string{sb.ID}, idsOf(siteRow, e.listSites(t, e.b)))
	require.Equal(t, []string{sc.ID}, idsOf(siteRow, e.listSites(t, e.c)))
}

// --- gates ------------------------------------------------------------------

func testGateCreateAndGet(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	var want []cloud.Gate
	for _, d := range []cloud.Direction{cloud.DirectionEntry, cloud.DirectionExit, cloud.DirectionBoth} {
		want = append(want, e.newGate(t, e.a, s.ID, func(g *cloud.Gate) {
			g.Name = "Gate " + string(d)
			g.Direction = d
			g.UpdatedAt = g.CreatedAt.Add(time.Minute + 3*time.Microsecond)
		}))
	}
	for _, w := range want {
		got, err := e.s.Gate(t.Context(), e.a, w.ID)
		require.NoError(t, err)
		requireGate(t, w, got)
	}
	_, err := e.s.Gate(t.Context(), e.a, ids.New(ids.Gate))
	requireNotFound(t, err)
}

func testGateCreateNeedsSite(t *testing.T, e *env) {
	sb := e.newSite(t, e.b)
	for _, tc := range []struct{ name, siteID string }{
		{"unknown site", ids.New(ids.Site)},
		{"another tenant's site", sb.ID},
	} {
		name, siteID := tc.name, tc.siteID
		at := e.tick()
		g := cloud.Gate{ID: ids.New(ids.Gate), Tenant: e.a, SiteID: siteID, Name: "G",
			Direction: cloud.DirectionEntry, CreatedAt: at, UpdatedAt: at}
		if !assertError(t, e.s.CreateGate(t.Context(), g), name) {
			continue
		}
		_, err := e.s.Gate(t.Context(), e.a, g.ID)
		requireNotFound(t, err, "the rejected gate was stored (%s)", name)
	}
}

func testGateUpdate(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	g := e.newGate(t, e.a, s.ID, func(g *cloud.Gate) { g.Direction = cloud.DirectionEntry })
	want := g
	want.Name, want.Direction, want.UpdatedAt = "Turnstile 2", cloud.DirectionExit, e.tick()
	got, err := e.s.UpdateGate(t.Context(), e.a, g.ID, func(x *cloud.Gate) error {
		requireGate(t, g, *x)
		x.Name, x.Direction, x.UpdatedAt = want.Name, want.Direction, want.UpdatedAt
		return nil
	})
	require.NoError(t, err)
	requireGate(t, want, got)
	got, err = e.s.Gate(t.Context(), e.a, g.ID)
	require.NoError(t, err)
	requireGate(t, want, got)
}

func testGateUpdateAborts(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	g := e.newGate(t, e.a, s.ID)
	_, err := e.s.UpdateGate(t.Context(), e.a, g.ID, func(x *cloud.Gate) error {
		x.Name, x.Direction, x.UpdatedAt = "Changed", cloud.DirectionExit, e.tick()
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	got, err := e.s.Gate(t.Context(), e.a, g.ID)
	require.NoError(t, err)
	requireGate(t, g, got)
}

func testGateUpdateUnknown(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	e.newGate(t, e.a, s.ID)
	_, err := e.s.UpdateGate(t.Context(), e.a, ids.New(ids.Gate), func(x *cloud.Gate) error {
		x.Name = "x"
		return nil
	})
	requireNotFound(t, err)
}

func testGateListFilters(t *testing.T, e *env) {
	s1 := e.newSite(t, e.a)
	s2 := e.newSite(t, e.a)
	g1 := e.newGate(t, e.a, s1.ID)
	g2 := e.newGate(t, e.a, s2.ID)
	g3 := e.newGate(t, e.a, s1.ID)
	all := e.listGates(t, e.a, cloud.GateFilter{})
	require.Equal(t, newestIDs(gateRow, g1, g2, g3), idsOf(gateRow, all))
	for _, got := range all {
		want := map[string]cloud.Gate{g1.ID: g1, g2.ID: g2, g3.ID: g3}[got.ID]
		requireGate(t, want, got)
	}
	require.Equal(t, newestIDs(gateRow, g1, g3), idsOf(gateRow, e.listGates(t, e.a, cloud.GateFilter{SiteID: s1.ID})))
	require.Equal(t, newestIDs(gateRow, g2), idsOf(gateRow, e.listGates(t, e.a, cloud.GateFilter{SiteID: s2.ID})))
	require.Empty(t, e.listGates(t, e.a, cloud.GateFilter{SiteID: ids.New(ids.Site)}))
}

func testGateTenantIsolation(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	g := e.newGate(t, e.a, s.ID)
	gb := e.newGate(t, e.b, e.newSite(t, e.b).ID)
	gc := e.newGate(t, e.c, e.newSite(t, e.c).ID)
	for _, other := range []cloud.Tenant{e.b, e.c} {
		_, err := e.s.Gate(t.Context(), other, g.ID)
		requireNotFound(t, err, "get in %v", other)
		_, err = e.s.UpdateGate(t.Context(), other, g.ID, func(x *cloud.Gate) error {
			x.Name = "Stolen"
			return nil
		})
		requireNotFound(t, err, "update in %v", other)
		require.Empty(t, e.listGates(t, other, cloud.GateFilter{SiteID: s.ID}), "list by another tenant's site in %v", other)
	}
	got, err := e.s.Gate(t.Context(), e.a, g.ID)
	require.NoError(t, err)
	requireGate(t, g, got)
	require.Equal(t, []string{g.ID}, idsOf(gateRow, e.listGates(t, e.a, cloud.GateFilter{})))
	require.Equal(t, []string{gb.ID}, idsOf(gateRow, e.listGates(t, e.b, cloud.GateFilter{})))
	require.Equal(t, []string{gc.ID}, idsOf(gateRow, e.listGates(t, e.c, cloud.GateFilter{})))
}

// --- people -----------------------------------------------------------------

func testPersonCreateAndGet(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	full := e.newPerson(t, e.a, func(p *cloud.Person) {
		p.Name, p.Email, p.Phone, p.JobTitle, p.SiteID = "Ada Lovelace", "Ada@Example.com", "+442071838750", "Countess", s.ID
		p.UpdatedAt = p.CreatedAt.Add(2 * time.Microsecond)
	})
	bare := e.newPerson(t, e.a, func(p *cloud.Person) {
		p.Name = "Bare"
		p.Active = false
		p.DeactivatedAt = ptr(p.CreatedAt.Add(time.Hour + 5*time.Microsecond))
	})
	for _, want := range []cloud.Person{full, bare} {
		got, err := e.s.Person(t.Context(), e.a, want.ID)
		require.NoError(t, err)
		requirePerson(t, want, got)
	}
	_, err := e.s.Person(t.Context(), e.a, ids.New(ids.Person))
	requireNotFound(t, err)
}

func testPeopleByIDs(t *testing.T, e *env) {
	p1 := e.newPerson(t, e.a, named[cloud.Person]("One"))
	e.newPerson(t, e.a, named[cloud.Person]("Two"))
	p3 := e.newPerson(t, e.a, named[cloud.Person]("Three"), func(p *cloud.Person) { p.Email = "three@example.com" })
	got, err := e.s.People(t.Context(), e.a, []string{p3.ID, ids.New(ids.Person), p1.ID})
	require.NoError(t, err)
	require.Len(t, got, 2)
	norm := func(ps []cloud.Person) []cloud.Person {
		out := make([]cloud.Person, len(ps))
		for i, p := range ps {
			out[i] = normPerson(p)
		}
		return out
	}
	require.ElementsMatch(t, norm([]cloud.Person{p1, p3}), norm(got))

	got, err = e.s.People(t.Context(), e.a, nil)
	require.NoError(t, err)
	require.Empty(t, got)
	got, err = e.s.People(t.Context(), e.a, []string{})
	require.NoError(t, err)
	require.Empty(t, got)
}

func testPersonUpdate(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p := e.newPerson(t, e.a, func(p *cloud.Person) { p.Email, p.JobTitle = "old@example.com", "Clerk" })
	want := p
	want.Name, want.Email, want.Phone, want.JobTitle, want.SiteID = "New Name", "New@Example.com", "+14155550100", "", s.ID
	want.Active = false
	want.DeactivatedAt = ptr(e.tick())
	want.UpdatedAt = *want.DeactivatedAt
	want.PassIssuedAt = p.PassIssuedAt.Add(time.Hour)
	got, err := e.s.UpdatePerson(t.Context(), e.a, p.ID, func(x *cloud.Person) error {
		requirePerson(t, p, *x)
		*x = want
		return nil
	})
	require.NoError(t, err)
	requirePerson(t, want, got)
	got, err = e.s.Person(t.Context(), e.a, p.ID)
	require.NoError(t, err)
	requirePerson(t, want, got)

	// Clearing the nullable fields again.
	want.Email, want.Phone, want.SiteID, want.Active, want.DeactivatedAt = "", "", "", true, nil
	want.UpdatedAt = e.tick()
	_, err = e.s.UpdatePerson(t.Context(), e.a, p.ID, func(x *cloud.Person) error {
		*x = want
		return nil
	})
	require.NoError(t, err)
	got, err = e.s.Person(t.Context(), e.a, p.ID)
	require.NoError(t, err)
	requirePerson(t, want, got)
}

func testPersonUpdateAborts(t *testing.T, e *env) {
	p := e.newPerson(t, e.a, func(p *cloud.Person) { p.Email = "keep@example.com" })
	_, err := e.s.UpdatePerson(t.Context(), e.a, p.ID, func(x *cloud.Person) error {
		x.Name, x.Email, x.Active, x.UpdatedAt = "Changed", "changed@example.com", false, e.tick()
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	got, err := e.s.Person(t.Context(), e.a, p.ID)
	require.NoError(t, err)
	requirePerson(t, p, got)
}

func testPersonUpdateUnknown(t *testing.T, e *env) {
	e.newPerson(t, e.a)
	_, err := e.s.UpdatePerson(t.Context(), e.a, ids.New(ids.Person), func(x *cloud.Person) error {
		x.Name = "x"
		return nil
	})
	requireNotFound(t, err)
}

func testPersonEmailUnique(t *testing.T, e *env) {
	first := e.newPerson(t, e.a, func(p *cloud.Person) { p.Email = "ada@example.com" })
	at := e.tick()
	dup := cloud.Person{ID: ids.New(ids.Person), Tenant: e.a, Name: "Other Ada", Email: "ADA@Example.COM",
		Active: true, CreatedAt: at, UpdatedAt: at}
	requireEmailConflict(t, e.s.CreatePerson(t.Context(), dup))
	_, err := e.s.Person(t.Context(), e.a, dup.ID)
	requireNotFound(t, err, "the conflicting person was stored")
	got, err := e.s.Person(t.Context(), e.a, first.ID)
	require.NoError(t, err)
	requirePerson(t, first, got)
}

func testPersonEmailUniquePerTenant(t *testing.T, e *env) {
	pa := e.newPerson(t, e.a, func(p *cloud.Person) { p.Email = "same@example.com" })
	pb := e.newPerson(t, e.b, func(p *cloud.Person) { p.Email = "same@example.com" })
	pc := e.newPerson(t, e.c, func(p *cloud.Person) { p.Email = "Same@Example.com" })
	for _, want := range []cloud.Person{pa, pb, pc} {
		got, err := e.s.Person(t.Context(), want.Tenant, want.ID)
		require.NoError(t, err)
		requirePerson(t, want, got)
	}
}

func testPersonEmptyEmails(t *testing.T, e *env) {
	p1 := e.newPerson(t, e.a, named[cloud.Person]("No Email 1"))
	p2 := e.newPerson(t, e.a, named[cloud.Person]("No Email 2"))
	p3 := e.newPerson(t, e.a, named[cloud.Person]("No Email 3"))
	require.Equal(t, newestIDs(personRow, p1, p2, p3), idsOf(personRow, e.listPeople(t, e.a, cloud.PersonFilter{})))
	// Clearing an email leaves one more empty email.
	p4 := e.newPerson(t, e.a, func(p *cloud.Person) { p.Email = "four@example.com" })
	_, err := e.s.UpdatePerson(t.Context(), e.a, p4.ID, func(x *cloud.Person) error {
		x.Email = ""
		return nil
	})
	require.NoError(t, err)
}

func testPersonUpdateEmailConflict(t *testing.T, e *env) {
	ada := e.newPerson(t, e.a, func(p *cloud.Person) { p.Email = "ada@example.com" })
	grace := e.newPerson(t, e.a, func(p *cloud.Person) { p.Email = "grace@example.com" })
	_, err := e.s.UpdatePerson(t.Context(), e.a, grace.ID, func(x *cloud.Person) error {
		x.Email, x.Name = "Ada@EXAMPLE.com", "Changed"
		return nil
	})
	requireEmailConflict(t, err)
	got, err := e.s.Person(t.Context(), e.a, grace.ID)
	require.NoError(t, err)
	requirePerson(t, grace, got)

	// Keeping one's own email, or changing only its case, is no conflict.
	want := ada
	want.Name, want.Email, want.UpdatedAt = "Ada L.", "ADA@example.com", e.tick()
	got, err = e.s.UpdatePerson(t.Context(), e.a, ada.ID, func(x *cloud.Person) error {
		x.Name, x.Email, x.UpdatedAt = want.Name, want.Email, want.UpdatedAt
		return nil
	})
	require.NoError(t, err)
	requirePerson(t, want, got)

	// An email given up is free again.
	_, err = e.s.UpdatePerson(t.Context(), e.a, ada.ID, func(x *cloud.Person) error {
		x.Email = "lovelace@example.com"
		return nil
	})
	require.NoError(t, err)
	_, err = e.s.UpdatePerson(t.Context(), e.a, grace.ID, func(x *cloud.Person) error {
		x.Email = "ada@example.com"
		return nil
	})
	require.NoError(t, err)
}

func testPersonListFilters(t *testing.T, e *env) {
	s1 := e.newSite(t, e.a)
	s2 := e.newSite(t, e.a)
	ada := e.newPerson(t, e.a, func(p *cloud.Person) {
		p.Name, p.Email, p.SiteID, p.JobTitle = "Ada Lovelace", "Ada@Analytical.example", s1.ID, "Countess"
	})
	grace := e.newPerson(t, e.a, func(p *cloud.Person) {
		p.Name, p.Email, p.SiteID = "Grace Hopper", "grace@navy.example", s2.ID
	})
	alan := e.newPerson(t, e.a, func(p *cloud.Person) {
		p.Name, p.Active, p.DeactivatedAt = "Alan Turing", false, ptr(p.CreatedAt)
	})
	asa := e.newPerson(t, e.a, func(p *cloud.Person) {
		p.Name, p.Email, p.SiteID = "Åsa Öberg", "asa@example.com", s1.ID
	})
	human := e.newPerson(t, e.a, named[cloud.Person]("100% Human"))
	// Another tenant's people never match.
	e.newPerson(t, e.b, func(p *cloud.Person) { p.Name, p.Email = "Ada Lovelace", "ada@analytical.example" })

	everyone := newestIDs(personRow, ada, grace, alan, asa, human)
	for _, tc := range []struct {
		name string
		f    cloud.PersonFilter
		want []string
	}{
		{"no filter", cloud.PersonFilter{}, everyone},
		{"name", cloud.PersonFilter{Query: cloud.Fold("LOVELACE")}, newestIDs(personRow, ada)},
		{"email", cloud.PersonFilter{Query: cloud.Fold("navy")}, newestIDs(personRow, grace)},
		{"mixed-case email", cloud.PersonFilter{Query: cloud.Fold("ANALYTICAL")}, newestIDs(personRow, ada)},
		{"non-ASCII", cloud.PersonFilter{Query: cloud.Fold("ÅSA ÖB")}, newestIDs(personRow, asa)},
		{"shared substring", cloud.PersonFilter{Query: cloud.Fold("AN")}, newestIDs(personRow, ada, alan, human)},
		{"no match", cloud.PersonFilter{Query: "zzz"}, nil},
		{"site 1", cloud.PersonFilter{SiteID: s1.ID}, newestIDs(personRow, ada, asa)},
		{"site 2", cloud.PersonFilter{SiteID: s2.ID}, newestIDs(personRow, grace)},
		{"email exact, other case", cloud.PersonFilter{Email: "GRACE@NAVY.EXAMPLE"}, newestIDs(personRow, grace)},
		{"email exact, stored mixed case", cloud.PersonFilter{Email: "ada@analytical.example"}, newestIDs(personRow, ada)},
		{"email is not a substring match", cloud.PersonFilter{Email: "navy.example"}, nil},
		{"active", cloud.PersonFilter{Active: ptr(true)}, newestIDs(personRow, ada, grace, asa, human)},
		{"inactive", cloud.PersonFilter{Active: ptr(false)}, newestIDs(personRow, alan)},
		{"query and active", cloud.PersonFilter{Query: "an", Active: ptr(true)}, newestIDs(personRow, ada, human)},
		{"query and site", cloud.PersonFilter{Query: "a", SiteID: s1.ID}, newestIDs(personRow, ada, asa)},
	} {
		got := e.listPeople(t, e.a, tc.f)
		if tc.want == nil {
			require.Empty(t, got, tc.name)
			continue
		}
		require.Equal(t, tc.want, idsOf(personRow, got), tc.name)
	}
	// Listed people carry every field.
	for _, got := range e.listPeople(t, e.a, cloud.PersonFilter{SiteID: s1.ID}) {
		want := map[string]cloud.Person{ada.ID: ada, asa.ID: asa}[got.ID]
		requirePerson(t, want, got)
	}
}

func testPersonListQueryLiteral(t *testing.T, e *env) {
	pct := e.newPerson(t, e.a, named[cloud.Person]("100% Human"))
	under := e.newPerson(t, e.a, named[cloud.Person]("under_score"))
	e.newPerson(t, e.a, named[cloud.Person]("underXscore"))
	e.newPerson(t, e.a, named[cloud.Person]("Plain"))
	quoted := e.newPerson(t, e.a, named[cloud.Person](`Say "Hello" Sam`))
	for q, want := range map[string][]string{
		"%":   {pct.ID},
		"0% ": {pct.ID},
		"_":   {under.ID},
		"r_s": {under.ID},
		`\`:   nil,
		// Long enough for the stores' trigram indexes (cloud.SearchIndexed).
		"100% hu":   {pct.ID},
		"der_sco":   {under.ID},
		"der%sco":   nil,
		`"hello"`:   {quoted.ID},
		`"hello" s`: {quoted.ID},
		`hello""`:   nil,
	} {
		got := e.listPeople(t, e.a, cloud.PersonFilter{Query: q})
		if want == nil {
			require.Empty(t, got, "query %q", q)
			continue
		}
		require.Equal(t, want, idsOf(personRow, got), "query %q", q)
	}
}

// testPersonListQueryFollowsUpdates checks q finds a person by the name
// and email they have now, not those they had.
func testPersonListQueryFollowsUpdates(t *testing.T, e *env) {
	ada := e.newPerson(t, e.a, func(p *cloud.Person) { p.Name, p.Email = "Ada Lovelace", "ada@analytical.example" })
	grace := e.newPerson(t, e.a, named[cloud.Person]("Grace Hopper"))
	_, err := e.s.UpdatePerson(t.Context(), e.a, ada.ID, func(x *cloud.Person) error {
		x.Name, x.Email = "Ada King", "countess@lovelace.example"
		return nil
	})
	require.NoError(t, err)
	for q, want := range map[string][]string{
		"lovelace":   {ada.ID}, // the email now
		"ada lov":    nil,
		"ada king":   {ada.ID},
		"analytical": nil,
		"hopper":     {grace.ID},
	} {
		got := idsOf(personRow, e.listPeople(t, e.a, cloud.PersonFilter{Query: q}))
		if want == nil {
			require.Empty(t, got, "query %q", q)
			continue
		}
		require.Equal(t, want, got, "query %q", q)
	}
}

func testPersonTenantIsolation(t *testing.T, e *env) {
	p := e.newPerson(t, e.a, func(p *cloud.Person) { p.Name, p.Email = "Shared Name", "shared@example.com" })
	pb := e.newPerson(t, e.b, func(p *cloud.Person) { p.Name, p.Email = "Shared Name", "shared@example.com" })
	pc := e.newPerson(t, e.c, func(p *cloud.Person) { p.Name, p.Email, p.Active = "Other", "other@example.com", false })
	for _, other := range []cloud.Tenant{e.b, e.c} {
		_, err := e.s.Person(t.Context(), other, p.ID)
		requireNotFound(t, err, "get in %v", other)
		_, err = e.s.UpdatePerson(t.Context(), other, p.ID, func(x *cloud.Person) error {
			x.Name = "Stolen"
			return nil
		})
		requireNotFound(t, err, "update in %v", other)
	}
	got, err := e.s.Person(t.Context(), e.a, p.ID)
	require.NoError(t, err)
	requirePerson(t, p, got)

	people, err := e.s.People(t.Context(), e.b, []string{p.ID, pb.ID, pc.ID})
	require.NoError(t, err)
	require.Equal(t, []string{pb.ID}, idsOf(personRow, people))
	people, err = e.s.People(t.Context(), e.c, []string{p.ID, pb.ID})
	require.NoError(t, err)
	require.Empty(t, people)

	require.Equal(t, []string{p.ID}, idsOf(personRow, e.listPeople(t, e.a, cloud.PersonFilter{})))
	require.Equal(t, []string{pb.ID}, idsOf(personRow, e.listPeople(t, e.b, cloud.PersonFilter{})))
	require.Equal(t, []string{pc.ID}, idsOf(personRow, e.listPeople(t, e.c, cloud.PersonFilter{})))
	// Filters that OR or match on shared values stay inside the tenant.
	for _, f := range []cloud.PersonFilter{
		{Query: "shared"},
		{Email: "SHARED@example.com"},
		{Active: ptr(true)},
	} {
		require.Equal(t, []string{pb.ID}, idsOf(personRow, e.listPeople(t, e.b, f)), "filter %+v", f)
		require.Empty(t, e.listPeople(t, e.c, f), "filter %+v", f)
	}
}

// --- teams ------------------------------------------------------------------

func testTeamCreateAndGet(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p1 := e.newPerson(t, e.a, func(p *cloud.Person) { p.Name, p.JobTitle = "One", "Porter" })
	p2 := e.newPerson(t, e.a, func(p *cloud.Person) { p.Name = "Two" })
	p3 := e.newPerson(t, e.a, func(p *cloud.Person) {
		p.Name, p.JobTitle, p.Active, p.DeactivatedAt = "Three", "Guard", false, ptr(p.CreatedAt)
	})
	full := e.newTeam(t, e.a, func(tm *cloud.Team) {
		tm.Name, tm.SiteID, tm.LeadID = "Reception", s.ID, p1.ID
		tm.VisitorsCanChoose = false
		tm.MemberIDs = []string{p3.ID, p1.ID, p2.ID}
		tm.UpdatedAt = tm.CreatedAt.Add(9 * time.Microsecond)
	})
	empty := e.newTeam(t, e.a, func(tm *cloud.Team) {
		tm.Name = "Nobody"
		tm.Archived = true
	})
	got, err := e.s.Team(t.Context(), e.a, full.ID)
	require.NoError(t, err)
	requireTeam(t, full, []cloud.Person{p3, p1, p2}, got)
	got, err = e.s.Team(t.Context(), e.a, empty.ID)
	require.NoError(t, err)
	requireTeam(t, empty, nil, got)
	_, err = e.s.Team(t.Context(), e.a, ids.New(ids.Team))
	requireNotFound(t, err)
}

func testTeamCreateNeedsMembers(t *testing.T, e *env) {
	mine := e.newPerson(t, e.a)
	theirs := e.newPerson(t, e.b)
	for _, tc := range []struct{ name, member string }{
		{"unknown person", ids.New(ids.Person)},
		{"another tenant's person", theirs.ID},
	} {
		name, member := tc.name, tc.member
		at := e.tick()
		tm := cloud.Team{ID: ids.New(ids.Team), Tenant: e.a, Name: "T", MemberIDs: []string{mine.ID, member},
			CreatedAt: at, UpdatedAt: at}
		if !assertError(t, e.s.CreateTeam(t.Context(), tm), name) {
			continue
		}
		_, err := e.s.Team(t.Context(), e.a, tm.ID)
		requireNotFound(t, err, "the rejected team was stored (%s)", name)
	}
}

// A page of teams brings each team its own members, in order, including
// teams with none between teams with some.
func testTeamListMembers(t *testing.T, e *env) {
	p1 := e.newPerson(t, e.a, func(p *cloud.Person) { p.Name, p.JobTitle = "One", "Porter" })
	p2 := e.newPerson(t, e.a, named[cloud.Person]("Two"))
	p3 := e.newPerson(t, e.a, named[cloud.Person]("Three"))
	members := func(ps ...cloud.Person) func(*cloud.Team) {
		return func(tm *cloud.Team) {
			tm.MemberIDs = []string{}
			for _, p := range ps {
				tm.MemberIDs = append(tm.MemberIDs, p.ID)
			}
		}
	}
	want := map[string][]cloud.Person{}
	for _, ps := range [][]cloud.Person{{p2, p1}, {}, {p3, p1, p2}, {}, {p1}} {
		tm := e.newTeam(t, e.a, members(ps...))
		want[tm.ID] = ps
	}
	e.newTeam(t, e.b, named[cloud.Team]("Other tenant"))

	teams, more, err := e.s.ListTeams(t.Context(), e.a, cloud.TeamFilter{}, cloud.Page{Limit: 10})
	require.NoError(t, err)
	require.False(t, more)
	require.Len(t, teams, len(want))
	for _, got := range teams {
		require.Contains(t, want, got.ID)
		require.NotNil(t, got.Members, "team %s: members are an empty list, not nil", got.ID)
		require.Len(t, got.Members, len(want[got.ID]), "team %s", got.ID)
		for i, p := range want[got.ID] {
			require.Equal(t, cloud.Member{ID: p.ID, Name: p.Name, JobTitle: p.JobTitle, Active: p.Active}, got.Members[i], "team %s member %d", got.ID, i)
			require.Equal(t, p.ID, got.MemberIDs[i], "team %s member id %d", got.ID, i)
		}
	}
}

func testTeamMembersFollowPeople(t *testing.T, e *env) {
	p1 := e.newPerson(t, e.a, func(p *cloud.Person) { p.Name, p.JobTitle = "One", "Porter" })
	p2 := e.newPerson(t, e.a, named[cloud.Person]("Two"))
	p3 := e.newPerson(t, e.a, named[cloud.Person]("Three"))
	tm := e.newTeam(t, e.a, func(tm *cloud.Team) { tm.MemberIDs = []string{p2.ID, p1.ID, p3.ID} })

	p1.Name, p1.JobTitle, p1.Active, p1.DeactivatedAt, p1.UpdatedAt = "One Renamed", "Head Porter", false, ptr(e.tick()), e.tick()
	_, err := e.s.UpdatePerson(t.Context(), e.a, p1.ID, func(x *cloud.Person) error {
		*x = p1
		return nil
	})
	require.NoError(t, err)

	got, err := e.s.Team(t.Context(), e.a, tm.ID)
	require.NoError(t, err)
	requireTeam(t, tm, []cloud.Person{p2, p1, p3}, got)
	require.False(t, got.Members[1].Active, "a deactivated member shows inactive")

	listed := e.listTeams(t, e.a, cloud.TeamFilter{})
	require.Len(t, listed, 1)
	requireTeam(t, tm, []cloud.Person{p2, p1, p3}, listed[0])
}

func testTeamUpdate(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p1 := e.newPerson(t, e.a, named[cloud.Person]("One"))
	p2 := e.newPerson(t, e.a, named[cloud.Person]("Two"))
	p3 := e.newPerson(t, e.a, named[cloud.Person]("Three"))
	p4 := e.newPerson(t, e.a, func(p *cloud.Person) { p.Name, p.JobTitle = "Four", "Cook" })
	tm := e.newTeam(t, e.a, func(tm *cloud.Team) {
		tm.MemberIDs, tm.LeadID = []string{p1.ID, p2.ID, p3.ID}, p1.ID
	})

	want := tm
	want.Name, want.SiteID, want.LeadID = "Kitchen", s.ID, p4.ID
	want.VisitorsCanChoose, want.Archived = false, true
	want.MemberIDs = []string{p4.ID, p3.ID}
	want.UpdatedAt = e.tick()
	got, err := e.s.UpdateTeam(t.Context(), e.a, tm.ID, func(x *cloud.Team) error {
		require.Equal(t, tm.MemberIDs, x.MemberIDs, "fn sees the current members")
		x.Name, x.SiteID, x.LeadID = want.Name, want.SiteID, want.LeadID
		x.VisitorsCanChoose, x.Archived = want.VisitorsCanChoose, want.Archived
		x.MemberIDs = []string{p4.ID, p3.ID}
		x.UpdatedAt = want.UpdatedAt
		return nil
	})
	require.NoError(t, err)
	requireTeam(t, want, []cloud.Person{p4, p3}, got)
	got, err = e.s.Team(t.Context(), e.a, tm.ID)
	require.NoError(t, err)
	requireTeam(t, want, []cloud.Person{p4, p3}, got)

	// Every member removed, site and lead cleared.
	want.MemberIDs, want.SiteID, want.LeadID, want.UpdatedAt = []string{}, "", "", e.tick()
	got, err = e.s.UpdateTeam(t.Context(), e.a, tm.ID, func(x *cloud.Team) error {
		x.MemberIDs, x.SiteID, x.LeadID, x.UpdatedAt = []string{}, "", "", want.UpdatedAt
		return nil
	})
	require.NoError(t, err)
	requireTeam(t, want, nil, got)
	got, err = e.s.Team(t.Context(), e.a, tm.ID)
	require.NoError(t, err)
	requireTeam(t, want, nil, got)
}

func testTeamUpdateAborts(t *testing.T, e *env) {
	p1 := e.newPerson(t, e.a, named[cloud.Person]("One"))
	p2 := e.newPerson(t, e.a, named[cloud.Person]("Two"))
	tm := e.newTeam(t, e.a, func(tm *cloud.Team) { tm.MemberIDs = []string{p1.ID, p2.ID} })
	_, err := e.s.UpdateTeam(t.Context(), e.a, tm.ID, func(x *cloud.Team) error {
		x.Name, x.Archived, x.MemberIDs, x.UpdatedAt = "Changed", true, []string{p2.ID}, e.tick()
		return errAbort
	})
	require.ErrorIs(t, err, errAbort)
	got, err := e.s.Team(t.Context(), e.a, tm.ID)
	require.NoError(t, err)
	requireTeam(t, tm, []cloud.Person{p1, p2}, got)
}

func testTeamUpdateUnknown(t *testing.T, e *env) {
	e.newTeam(t, e.a)
	_, err := e.s.UpdateTeam(t.Context(), e.a, ids.New(ids.Team), func(x *cloud.Team) error {
		x.Name = "x"
		return nil
	})
	requireNotFound(t, err)
}

func testTeamListFilters(t *testing.T, e *env) {
	s1 := e.newSite(t, e.a)
	s2 := e.newSite(t, e.a)
	p1 := e.newPerson(t, e.a, named[cloud.Person]("One"))
	p2 := e.newPerson(t, e.a, named[cloud.Person]("Two"))
	site := func(id string) func(*cloud.Team) { return func(tm *cloud.Team) { tm.SiteID = id } }
	noChoice := func(tm *cloud.Team) { tm.VisitorsCanChoose = false }
	archived := func(tm *cloud.Team) { tm.Archived = true }

	reception := e.newTeam(t, e.a, named[cloud.Team]("Reception"), site(s1.ID),
		func(tm *cloud.Team) { tm.MemberIDs = []string{p2.ID, p1.ID} })
	frontDesk := e.newTeam(t, e.a, named[cloud.Team]("Front Desk"))
	deskSupport := e.newTeam(t, e.a, named[cloud.Team]("Desk Support"), site(s2.ID), noChoice)
	facilities := e.newTeam(t, e.a, named[cloud.Team]("Facilities"), site(s1.ID), noChoice, archived)
	oldDesk := e.newTeam(t, e.a, named[cloud.Team]("Old Desk"), archived)
	security := e.newTeam(t, e.a, named[cloud.Team]("SECURITY"), site(s2.ID))
	// Another tenant's teams never match.
	e.newTeam(t, e.b, named[cloud.Team]("Front Desk"))

	for _, tc := range []struct {
		name string
		f    cloud.TeamFilter
		want []string
	}{
		{"no filter hides archived", cloud.TeamFilter{}, newestIDs(teamRow, reception, frontDesk, deskSupport, security)},
		{"include archived", cloud.TeamFilter{IncludeArchived: true},
			newestIDs(teamRow, reception, frontDesk, deskSupport, facilities, oldDesk, security)},
		{"query shared substring", cloud.TeamFilter{Query: cloud.Fold("DESK")}, newestIDs(teamRow, frontDesk, deskSupport)},
		{"query shared substring with archived", cloud.TeamFilter{Query: cloud.Fold("Desk"), IncludeArchived: true},
			newestIDs(teamRow, frontDesk, deskSupport, oldDesk)},
		{"query upper-case name", cloud.TeamFilter{Query: cloud.Fold("curi")}, newestIDs(teamRow, security)},
		{"query prefix", cloud.TeamFilter{Query: cloud.Fold("FRONT")}, newestIDs(teamRow, frontDesk)},
		{"query no match", cloud.TeamFilter{Query: "zzz"}, nil},
		{"site 1 and every site", cloud.TeamFilter{SiteID: s1.ID}, newestIDs(teamRow, reception, frontDesk)},
		{"site 2 and every site", cloud.TeamFilter{SiteID: s2.ID}, newestIDs(teamRow, frontDesk, deskSupport, security)},
		{"site 1 with archived", cloud.TeamFilter{SiteID: s1.ID, IncludeArchived: true},
			newestIDs(teamRow, reception, frontDesk, facilities, oldDesk)},
		{"visitors can choose", cloud.TeamFilter{VisitorsCanChoose: ptr(true)}, newestIDs(teamRow, reception, frontDesk, security)},
		{"visitors cannot choose", cloud.TeamFilter{VisitorsCanChoose: ptr(false)}, newestIDs(teamRow, deskSupport)},
		{"visitors cannot choose with archived", cloud.TeamFilter{VisitorsCanChoose: ptr(false), IncludeArchived: true},
			newestIDs(teamRow, deskSupport, facilities)},
		{"query and site", cloud.TeamFilter{Query: "desk", SiteID: s1.ID}, newestIDs(teamRow, frontDesk)},
		{"site and choice", cloud.TeamFilter{SiteID: s2.ID, VisitorsCanChoose: ptr(true)}, newestIDs(teamRow, frontDesk, security)},
	} {
		got := e.listTeams(t, e.a, tc.f)
		if tc.want == nil {
			require.Empty(t, got, tc.name)
			continue
		}
		require.Equal(t, tc.want, idsOf(teamRow, got), tc.name)
	}
	// Listed teams carry their members.
	got := e.listTeams(t, e.a, cloud.TeamFilter{Query: "reception"})
	require.Len(t, got, 1)
	requireTeam(t, reception, []cloud.Person{p2, p1}, got[0])
}

func testTeamListQueryLiteral(t *testing.T, e *env) {
	pct := e.newTeam(t, e.a, named[cloud.Team]("100% Club"))
	under := e.newTeam(t, e.a, named[cloud.Team]("a_b team"))
	e.newTeam(t, e.a, named[cloud.Team]("aXb team"))
	e.newTeam(t, e.a, named[cloud.Team]("Plain"))
	for q, want := range map[string][]string{
		"%":   {pct.ID},
		"0% ": {pct.ID},
		"_":   {under.ID},
		"a_b": {under.ID},
		`\`:   nil,
		// Long enough for the stores' trigram indexes (cloud.SearchIndexed).
		"100% cl":  {pct.ID},
		"a_b team": {under.ID},
		"a%b team": nil,
	} {
		got := e.listTeams(t, e.a, cloud.TeamFilter{Query: q})
		if want == nil {
			require.Empty(t, got, "query %q", q)
			continue
		}
		require.Equal(t, want, idsOf(teamRow, got), "query %q", q)
	}
}

// testTeamListQueryFollowsUpdates checks q finds a team by the name it
// has now, not the one it had.
func testTeamListQueryFollowsUpdates(t *testing.T, e *env) {
	tm := e.newTeam(t, e.a, named[cloud.Team]("Reception"))
	_, err := e.s.UpdateTeam(t.Context(), e.a, tm.ID, func(x *cloud.Team) error {
		x.Name = "Front Desk"
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, e.listTeams(t, e.a, cloud.TeamFilter{Query: "reception"}))
	require.Equal(t, []string{tm.ID}, idsOf(teamRow, e.listTeams(t, e.a, cloud.TeamFilter{Query: "front desk"})))
}

func testTeamTenantIsolation(t *testing.T, e *env) {
	s := e.newSite(t, e.a)
	p := e.newPerson(t, e.a)
	tm := e.newTeam(t, e.a, named[cloud.Team]("Shared"), func(tm *cloud.Team) {
		tm.SiteID, tm.MemberIDs = s.ID, []string{p.ID}
	})
	// Teams at every site: the filter on site ORs them in, but only the
	// tenant's own.
	tb := e.newTeam(t, e.b, named[cloud.Team]("Shared"))
	tc := e.newTeam(t, e.c, named[cloud.Team]("Other"), func(tm *cloud.Team) { tm.VisitorsCanChoose = false })
	for _, other := range []cloud.Tenant{e.b, e.c} {
		_, err := e.s.Team(t.Context(), other, tm.ID)
		requireNotFound(t, err, "get in %v", other)
		_, err = e.s.UpdateTeam(t.Context(), other, tm.ID, func(x *cloud.Team) error {
			x.Name = "Stolen"
			return nil
		})
		requireNotFound(t, err, "update in %v", other)
	}
	got, err := e.s.Team(t.Context(), e.a, tm.ID)
	require.NoError(t, err)
	requireTeam(t, tm, []cloud.Person{p}, got)

	require.Equal(t, []string{tm.ID}, idsOf(teamRow, e.listTeams(t, e.a, cloud.TeamFilter{})))
	require.Equal(t, []string{tb.ID}, idsOf(teamRow, e.listTeams(t, e.b, cloud.TeamFilter{})))
	require.Equal(t, []string{tc.ID}, idsOf(teamRow, e.listTeams(t, e.c, cloud.TeamFilter{})))
	for _, f := range []cloud.TeamFilter{
		{SiteID: s.ID},
		{Query: "shared"},
		{VisitorsCanChoose: ptr(true)},
		{IncludeArchived: true},
	} {
		require.Equal(t, []string{tb.ID}, idsOf(teamRow, e.listTeams(t, e.b, f)), "filter %+v", f)
	}
	require.Empty(t, e.listTeams(t, e.c, cloud.TeamFilter{SiteID: s.ID, VisitorsCanChoose: ptr(true)}))
}

// --- pagination -------------------------------------------------------------

// pager makes rows of one kind at chosen creation times and lists them.
type pager func(t testing.TB, e *env) (create func(at time.Time) row, list func(p cloud.Page) ([]row, bool))

func rowsOf[T any](t testing.TB, key func(T) row, xs []T, more bool, err error) ([]row, bool) {
	t.Helper()
	require.NoError(t, err)
	out := make([]row, len(xs))
	for i, x := range xs {
		out[i] = key(x)
	}
	return out, more
}

func sitePager(t testing.TB, e *env) (func(time.Time) row, func(cloud.Page) ([]row, bool)) {
	return func(at time.Time) row {
			return siteRow(e.newSite(t, e.a, func(s *cloud.Site) { s.CreatedAt, s.UpdatedAt = at, at }))
		}, func(p cloud.Page) ([]row, bool) {
			xs, more, err := e.s.ListSites(t.Context(), e.a, cloud.SiteFilter{}, p)
			return rowsOf(t, siteRow, xs, more, err)
		}
}

func gatePager(t testing.TB, e *env) (func(time.Time) row, func(cloud.Page) ([]row, bool)) {
	s := e.newSite(t, e.a)
	return func(at time.Time) row {
			return gateRow(e.newGate(t, e.a, s.ID, func(g *cloud.Gate) { g.CreatedAt, g.UpdatedAt = at, at }))
		}, func(p cloud.Page) ([]row, bool) {
			xs, more, err := e.s.ListGates(t.Context(), e.a, cloud.GateFilter{}, p)
			return rowsOf(t, gateRow, xs, more, err)
		}
}

func personPager(t testing.TB, e *env) (func(time.Time) row, func(cloud.Page) ([]row, bool)) {
	return func(at time.Time) row {
			return personRow(e.newPerson(t, e.a, func(p *cloud.Person) { p.CreatedAt, p.UpdatedAt = at, at }))
		}, func(p cloud.Page) ([]row, bool) {
			xs, more, err := e.s.ListPeople(t.Context(), e.a, cloud.PersonFilter{}, p)
			return rowsOf(t, personRow, xs, more, err)
		}
}

func teamPager(t testing.TB, e *env) (func(time.Time) row, func(cloud.Page) ([]row, bool)) {
	return func(at time.Time) row {
			return teamRow(e.newTeam(t, e.a, func(tm *cloud.Team) { tm.CreatedAt, tm.UpdatedAt = at, at }))
		}, func(p cloud.Page) ([]row, bool) {
			xs, more, err := e.s.ListTeams(t.Context(), e.a, cloud.TeamFilter{}, p)
			return rowsOf(t, teamRow, xs, more, err)
		}
}

func paginationTests(p pager) []test {
	return []test{
		{"Pagination", func(t *testing.T, e *env) { testPagination(t, e, p) }},
		{"PaginationSameCreatedAt", func(t *testing.T, e *env) { testPaginationSameCreatedAt(t, e, p) }},
		{"PaginationWhileInserting", func(t *testing.T, e *env) { testPaginationWhileInserting(t, e, p) }},
	}
}

// pages walks list limit rows a page, checking each page's size and that
// only the last says no more follow.
func pages(t testing.TB, list func(cloud.Page) ([]row, bool), limit, total int, between func()) []row {
	t.Helper()
	var all []row
	p := cloud.Page{Limit: limit}
	for n := 1; ; n++ {
		require.LessOrEqual(t, n, total+1, "limit %d: more pages than rows", limit)
		page, more := list(p)
		all = append(all, page...)
		wantLen := min(limit, total-len(all)+len(page))
		require.Len(t, page, wantLen, "limit %d, page %d", limit, n)
		require.Equal(t, len(all) < total, more, "limit %d, page %d: more rows follow", limit, n)
		if !more {
			return all
		}
		last := page[len(page)-1]
		p.After = &cloud.Position{CreatedAt: last.CreatedAt, ID: last.ID}
		if between != nil {
			between()
		}
	}
}

func requireRows(t testing.TB, want, got []row, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, rowIDs(want), rowIDs(got), msgAndArgs...)
	for i := range want {
		require.True(t, want[i].CreatedAt.Equal(got[i].CreatedAt), "row %d created at: want %v, got %v",
			i, want[i].CreatedAt, got[i].CreatedAt)
	}
}

func testPagination(t *testing.T, e *env, p pager) {
	create, list := p(t, e)
	base := e.now.Add(-24 * time.Hour)
	// Created out of time order, so insertion order is not the answer.
	var rows []row
	for _, k := range []int{3, 7, 0, 9, 1, 5, 8, 2, 6, 4} {
		rows = append(rows, create(base.Add(time.Duration(k)*(time.Minute+time.Microsecond))))
	}
	sortNewest(rows)
	for _, limit := range []int{1, 3, 4, 5, 10, 11, 100} {
		requireRows(t, rows, pages(t, list, limit, len(rows), nil), "limit %d", limit)
	}
	// A page after the oldest row is empty and last.
	last := rows[len(rows)-1]
	page, more := list(cloud.Page{Limit: 5, After: &cloud.Position{CreatedAt: last.CreatedAt, ID: last.ID}})
	require.Empty(t, page)
	require.False(t, more)
}

func testPaginationSameCreatedAt(t *testing.T, e *env, p pager) {
	create, list := p(t, e)
	same := e.now.Add(-24 * time.Hour)
	var rows []row
	for i := range 12 {
		at := same
		switch i % 4 {
		case 1:
			at = same.Add(time.Microsecond)
		case 3:
			at = same.Add(-time.Microsecond)
		}
		rows = append(rows, create(at))
	}
	sortNewest(rows)
	for _, limit := range []int{1, 2, 3, 5, 12} {
		requireRows(t, rows, pages(t, list, limit, len(rows), nil), "limit %d", limit)
	}
}

func testPaginationWhileInserting(t *testing.T, e *env, p pager) {
	create, list := p(t, e)
	base := e.now.Add(-24 * time.Hour)
	var rows []row
	for _, k := range []int{4, 1, 7, 1, 0, 8, 2, 6, 4, 5, 3} {
		rows = append(rows, create(base.Add(time.Duration(k)*time.Second)))
	}
	sortNewest(rows)
	inserted := 0
	got := pages(t, list, 3, len(rows), func() {
		create(e.tick())
		inserted++
	})
	requireRows(t, rows, got)
	require.Positive(t, inserted)
	all := pages(t, list, 100, len(rows)+inserted, nil)
	requireRows(t, rows, all[inserted:], "the rows from before the walk come after the new ones")
}

// --- concurrency ------------------------------------------------------------

func testConcurrentWriters(t *testing.T, e *env) {
	const workers, each = 8, 25
	ctx := t.Context()
	team := e.newTeam(t, e.a, named[cloud.Team]("T"))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		created []string
	)
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range each {
				at := e.tick()
				p := cloud.Person{ID: ids.New(ids.Person), Tenant: e.a, Name: fmt.Sprintf("Worker %d person %d", w, i),
					Email: fmt.Sprintf("w%d-p%d@example.com", w, i), Active: true, CreatedAt: at, UpdatedAt: at}
				err := e.s.CreatePerson(ctx, p)
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("create person %d/%d: %w", w, i, err))
				} else {
					created = append(created, p.ID)
				}
				mu.Unlock()
				_, err = e.s.UpdateTeam(ctx, e.a, team.ID, func(tm *cloud.Team) error {
					tm.Name += "x"
					return nil
				})
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("update team %d/%d: %w", w, i, err))
					mu.Unlock()
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Len(t, created, workers*each)

	listed := walk(t, 100, personRow, func(p cloud.Page) ([]cloud.Person, bool, error) {
		return e.s.ListPeople(t.Context(), e.a, cloud.PersonFilter{}, p)
	})
	require.ElementsMatch(t, created, idsOf(personRow, listed))
	got, err := e.s.Team(t.Context(), e.a, team.ID)
	require.NoError(t, err)
	require.Equal(t, "T"+strings.Repeat("x", workers*each), got.Name, "every team update is kept")
}

func testConcurrentUpdatePerson(t *testing.T, e *env) {
	const workers, each = 8, 10
	ctx := t.Context()
	p := e.newPerson(t, e.a)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	start := make(chan struct{})
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c := string(rune('a' + w))
			for range each {
				_, err := e.s.UpdatePerson(ctx, e.a, p.ID, func(x *cloud.Person) error {
					x.JobTitle += c
					return nil
				})
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("worker %d: %w", w, err))
					mu.Unlock()
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	got, err := e.s.Person(t.Context(), e.a, p.ID)
	require.NoError(t, err)
	require.Len(t, got.JobTitle, workers*each, "updates were lost: %q", got.JobTitle)
	for w := range workers {
		c := string(rune('a' + w))
		require.Equal(t, each, strings.Count(got.JobTitle, c), "appends of worker %d", w)
	}
}

// --- request counts ---------------------------------------------------------

func (e *env) count(t testing.TB, tn cloud.Tenant, window time.Time) int64 {
	t.Helper()
	n, err := e.s.CountRequests(t.Context(), tn, window, 1)
	require.NoError(t, err)
	return n
}

func testCountsUp(t *testing.T, e *env) {
	w := e.now.Truncate(time.Minute)
	for want := int64(1); want <= 3; want++ {
		require.Equal(t, want, e.count(t, e.a, w))
	}
	// A claim of several at once (httpapi's slices) adds them all.
	n, err := e.s.CountRequests(t.Context(), e.a, w, 40)
	require.NoError(t, err)
	require.Equal(t, int64(43), n)
	require.Equal(t, int64(44), e.count(t, e.a, w))
}

func testCountsIndependent(t *testing.T, e *env) {
	w := e.now.Truncate(time.Minute)
	require.Equal(t, int64(1), e.count(t, e.a, w))
	require.Equal(t, int64(2), e.count(t, e.a, w))
	require.Equal(t, int64(1), e.count(t, e.a, w.Add(time.Minute)), "next window")
	require.Equal(t, int64(1), e.count(t, e.a, w.Add(-time.Minute)), "previous window")
	require.Equal(t, int64(1), e.count(t, e.b, w), "test mode")
	require.Equal(t, int64(1), e.count(t, e.c, w), "other organisation")
	require.Equal(t, int64(3), e.count(t, e.a, w))
}

func testCountsConcurrent(t *testing.T, e *env) {
	const workers, each = 8, 50
	ctx := t.Context()
	w := e.now.Truncate(time.Minute)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []error
		counts []int64
	)
	start := make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range each {
				n, err := e.s.CountRequests(ctx, e.a, w, 1)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					counts = append(counts, n)
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	slices.Sort(counts)
	want := make([]int64, workers*each)
	for i := range want {
		want[i] = int64(i + 1)
	}
	require.Equal(t, want, counts, "each request sees its own count")
	require.Equal(t, int64(workers*each+1), e.count(t, e.a, w))
}

func testCountsPurge(t *testing.T, e *env) {
	w := e.now.Truncate(time.Minute)
	old := w.Add(-2 * time.Minute)
	for range 3 {
		e.count(t, e.a, old)
	}
	e.count(t, e.b, old)
	e.count(t, e.a, w)
	require.Equal(t, int64(2), e.count(t, e.a, w))

	n, err := e.s.PurgeRequestCounts(t.Context(), w.Add(-time.Minute))
	require.NoError(t, err)
	require.Equal(t, int64(2), n, "one counter per tenant and window")

	require.Equal(t, int64(1), e.count(t, e.a, old), "a purged window starts again")
	require.Equal(t, int64(1), e.count(t, e.b, old), "a purged window starts again")
	require.Equal(t, int64(3), e.count(t, e.a, w), "a newer window is kept")
}

// --- secrets ----------------------------------------------------------------

func testSecretFirstValueWins(t *testing.T, e *env) {
	gen := func(v string) func() []byte { return func() []byte { return []byte(v) } }
	got, err := e.s.Secret(t.Context(), "cursor", gen("first value"))
	require.NoError(t, err)
	require.Equal(t, []byte("first value"), got)
	got, err = e.s.Secret(t.Context(), "cursor", gen("second value"))
	require.NoError(t, err)
	require.Equal(t, []byte("first value"), got)
	got, err = e.s.Secret(t.Context(), "other", gen("other value"))
	require.NoError(t, err)
	require.Equal(t, []byte("other value"), got, "secrets are per name")
	got, err = e.s.Secret(t.Context(), "cursor", gen("third value"))
	require.NoError(t, err)
	require.Equal(t, []byte("first value"), got)
}

func testSecretConcurrent(t *testing.T, e *env) {
	const n = 8
	ctx := t.Context()
	got := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			got[i], errs[i] = e.s.Secret(ctx, "shared", func() []byte { return []byte(fmt.Sprintf("value %d", i)) })
		}()
	}
	close(start)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.Regexp(t, `^value [0-7]$`, string(got[0]))
	for i := range n {
		require.Equal(t, got[0], got[i], "call %d", i)
	}
	again, err := e.s.Secret(ctx, "shared", func() []byte { return []byte("late") })
	require.NoError(t, err)
	require.Equal(t, got[0], again)
}
