package cloud_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/sqlite"
	"github.com/svc-vms/svc/cloud/storetest/stores"
	"github.com/svc-vms/svc/sync/protocol"
)

const stillWaiting = "A visitor is still waiting"

// walkInAt makes a walk-in at site now, for the team given (empty: the
// desk), through the API's code.
func (e *edgeEnv) walkInAt(t *testing.T, siteID, teamID string) cloud.Visit {
	t.Helper()
	in := cloud.VisitInput{SiteID: cloud.Some(siteID), Type: cloud.Some("meeting"), WalkIn: cloud.Some(true),
		Visitor: cloud.Some(&cloud.VisitorInput{Name: cloud.Some("Wanda Waits")})}
	if teamID != "" {
		in.TeamID = cloud.Some(teamID)
	}
	v, err := e.svc.CreateVisit(t.Context(), e.actor, in)
	require.NoError(t, err)
	require.True(t, v.NeedsSomeone)
	return v
}

// reminders returns the visit's waiting reminders, oldest first.
func (e *edgeEnv) reminders(t *testing.T, visitID string) []cloud.Message {
	t.Helper()
	var out []cloud.Message
	for _, m := range e.messages(t, visitID) {
		if m.Subject == stillWaiting {
			out = append([]cloud.Message{m}, out...)
		}
	}
	return out
}

func (e *edgeEnv) remind(t *testing.T) int {
	t.Helper()
	n, err := e.svc.RemindWaiting(t.Context())
	require.NoError(t, err)
	return n
}

// A visitor waiting for a team past the site's limit (the default, ten
// minutes) gets one reminder to the team, not before the limit and not
// again; it fires no event and shows nothing new in the API.
func TestRemindWaiting_OnceAfterLimit(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		e.svc.SetEventRenderer(httpapi.RenderEvent)
		team := e.live.Teams[1] // Customer Support, at London
		v := e.walkInAt(t, e.site.SiteID, team)
		events, _ := e.events(t, v.ID)

		e.clock.Advance(10*time.Minute - time.Second)
		require.Zero(t, e.remind(t), "not before the limit")
		require.Empty(t, e.reminders(t, v.ID))

		e.clock.Advance(time.Second)
		require.Equal(t, 1, e.remind(t))
		ms := e.reminders(t, v.ID)
		require.Len(t, ms, 1)
		require.Equal(t, cloud.ChannelConsole, ms[0].Channel)
		require.Equal(t, team, ms[0].To, "the team the visitor waits with")
		require.Equal(t, "Wanda Waits has been waiting at London HQ for 10 minutes and nobody has taken the visit yet.", ms[0].Body)
		require.Equal(t, cloud.MessageQueued, ms[0].Status)
		require.True(t, e.clock.Now().Equal(ms[0].CreatedAt))

		e.clock.Advance(30 * time.Minute)
		require.Zero(t, e.remind(t), "once per wait")
		require.Len(t, e.reminders(t, v.ID), 1)

		after, _ := e.events(t, v.ID)
		require.Equal(t, events, after, "no event: the catalogue has none for a reminder")
		got := e.get(t, v.ID)
		require.True(t, v.UpdatedAt.Equal(got.UpdatedAt), "nothing the API shows changed")
		require.True(t, got.WaitingSince.Equal(*got.RemindedFor))
	})
}

// The limit is the site's own: a site whose limit was set to three
// minutes reminds (reception, for a walk-in for no one in particular)
// after three, while another site's visitor waiting as long, under the
// default, is not yet reminded.
func TestRemindWaiting_SiteLimit(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		_, err := e.svc.UpdateSite(t.Context(), e.tenant, e.site.SiteID, cloud.SiteInput{WaitLimitMinutes: cloud.Some(3)})
		require.NoError(t, err)
		here := e.walkInAt(t, e.site.SiteID, "")
		there := e.walkInAt(t, e.other.ID, "")

		e.clock.Advance(3 * time.Minute)
		require.Equal(t, 1, e.remind(t))
		ms := e.reminders(t, here.ID)
		require.Len(t, ms, 1)
		require.Equal(t, cloud.Reception, ms[0].To)
		require.Contains(t, ms[0].Body, "for 3 minutes")
		require.Empty(t, e.reminders(t, there.ID), "the other site's limit is the default")

		e.clock.Advance(7 * time.Minute)
		require.Equal(t, 1, e.remind(t))
		require.Len(t, e.reminders(t, there.ID), 1)
	})
}

// A visit taken at the desk, or checked out, before the limit is never
// reminded of.
func TestRemindWaiting_NotTakenOrCheckedOut(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		team := e.live.Teams[1]
		taken, left := e.walkInAt(t, e.site.SiteID, team), e.walkInAt(t, e.site.SiteID, team)
		e.clock.Advance(5 * time.Minute)
		take := e.deskFact(protocol.FactTake, taken.ID)
		take.PersonID = e.live.People[0]
		require.NoError(t, e.svc.ApplyFact(t.Context(), e.site, take))
		_, err := e.svc.CheckOut(t.Context(), e.actor, left.ID)
		require.NoError(t, err)

		e.clock.Advance(time.Hour)
		require.Zero(t, e.remind(t))
		require.Empty(t, e.reminders(t, taken.ID))
		require.Empty(t, e.reminders(t, left.ID))
	})
}

// A hand-over starts a new wait: after the first wait's reminder, the
// visit handed to a person is reminded again once the limit has passed
// since the hand-over, and to the person (by email, as hand-over tells
// them).
func TestRemindWaiting_HandOverRestartsWait(t *testing.T) {
	stores.Each(t, func(t *testing.T, store cloud.Store) {
		e := newEdgeEnv(t, store)
		v := e.walkInAt(t, e.site.SiteID, e.live.Teams[1])
		e.clock.Advance(10 * time.Minute)
		require.Equal(t, 1, e.remind(t))

		e.clock.Advance(2 * time.Minute)
		person := e.person(t, e.live.People[2])
		_, err := e.svc.HandOver(t.Context(), e.actor, v.ID, cloud.HandOverInput{To: cloud.Some(cloud.ReceiverPerson),
			PersonID: cloud.Some(person.ID)})
		require.NoError(t, err)

		e.clock.Advance(10*time.Minute - time.Second)
		require.Zero(t, e.remind(t), "the new wait is not past the limit")
		e.clock.Advance(time.Second)
		require.Equal(t, 1, e.remind(t))
		ms := e.reminders(t, v.ID)
		require.Len(t, ms, 2)
		require.NotEmpty(t, person.Email)
		require.Equal(t, cloud.ChannelEmail, ms[1].Channel)
		require.Equal(t, person.Email, ms[1].To)
		require.Contains(t, ms[1].Body, "for 10 minutes")

		e.clock.Advance(time.Hour)
		require.Zero(t, e.remind(t))
	})
}

// Several processes sending reminders at once, each with its own
// connections to one database, send each reminder once.
func TestRemindWaiting_ConcurrentRuns(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) func() cloud.Store{
		"sqlite": func(t *testing.T) func() cloud.Store {
			path := filepath.Join(t.TempDir(), "cloud.db")
			return func() cloud.Store {
				s, err := sqlite.Open(context.Background(), path, kektest.Ring())
				require.NoError(t, err)
				t.Cleanup(func() { s.Close() })
				return s
			}
		},
		"postgres": func(t *testing.T) func() cloud.Store {
			url := postgrestest.URL(t)
			schema := postgrestest.NewSchema(t, url)
			return func() cloud.Store {
				s, err := postgrestest.OpenIn(t, url, schema)
				require.NoError(t, err)
				t.Cleanup(func() { s.Close() })
				return s
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			next := open(t)
			e := newEdgeEnv(t, next())
			const visits, processes = 12, 4
			var ids []string
			for range visits {
				ids = append(ids, e.walkInAt(t, e.site.SiteID, e.live.Teams[1]).ID)
			}
			e.clock.Advance(time.Hour)
			svcs := make([]*cloud.Service, processes)
			for i := range svcs {
				svcs[i] = cloud.NewService(next(), e.clock.Now)
			}
			var wg sync.WaitGroup
			sent := make([]int, processes)
			errs := make([]error, processes)
			start := make(chan struct{})
			for i, svc := range svcs {
				wg.Go(func() {
					<-start
					sent[i], errs[i] = svc.RemindWaiting(t.Context())
				})
			}
			close(start)
			wg.Wait()
			total := 0
			for i := range svcs {
				require.NoError(t, errs[i])
				total += sent[i]
			}
			require.Equal(t, visits, total, "sent: %v", sent)
			for _, id := range ids {
				require.Len(t, e.reminders(t, id), 1, "visit %s", id)
			}
		})
	}
}

// logSignal is a slog handler that hands each message logged to a
// channel.
type logSignal struct{ msgs chan string }

func (h logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h logSignal) Handle(_ context.Context, r slog.Record) error {
	h.msgs <- r.Message
	return nil
}
func (h logSignal) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logSignal) WithGroup(string) slog.Handler      { return h }

// WaitReminders.Run sends the reminders due at once, then each interval,
// and returns nil when its context ends.
func TestWaitReminders_Run(t *testing.T) {
	store, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cloud.db"), kektest.Ring())
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	e := newEdgeEnv(t, store)
	v := e.walkInAt(t, e.site.SiteID, "")
	e.clock.Advance(time.Hour)

	logs := logSignal{msgs: make(chan string, 16)}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	r := &cloud.WaitReminders{Service: e.svc, Interval: time.Hour, Log: slog.New(logs)}
	go func() { done <- r.Run(ctx) }()
	msg := <-logs.msgs
	require.True(t, strings.HasPrefix(msg, "sent waiting reminders"), msg)
	cancel()
	require.NoError(t, <-done)
	require.Len(t, e.reminders(t, v.ID), 1)
}
