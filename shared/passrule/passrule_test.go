package passrule_test

import (
	"encoding/json"
	"testing"
	"time"
	_ "time/tzdata" // the zones below must not depend on the machine's zoneinfo

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/passrule"
)

func utc(y int, mo time.Month, d, h, mi, s int) time.Time {
	return time.Date(y, mo, d, h, mi, s, 0, time.UTC)
}

func zone(tb testing.TB, name string) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation(name)
	require.NoError(tb, err)
	return loc
}

func clock(tb testing.TB, s string) passrule.Clock {
	tb.Helper()
	c, err := passrule.ParseClock(s)
	require.NoError(tb, err)
	return c
}

func daily(tb testing.TB, from, until string) *passrule.Daily {
	tb.Helper()
	return &passrule.Daily{From: clock(tb, from), Until: clock(tb, until)}
}

// admitted is an input every check passes: an expected visit from 09:00 to
// 17:00 UTC, scanned at noon at one of its gates. Each case spoils it.
func admitted() passrule.Input {
	return passrule.Input{
		Status:        passrule.Expected,
		ExpectedAt:    utc(2026, time.June, 10, 9, 0, 0),
		ExpectedUntil: utc(2026, time.June, 10, 17, 0, 0),
		VisitSiteID:   "site_a",
		GateID:        "gate_1",
		GateSiteID:    "site_a",
		Now:           utc(2026, time.June, 10, 12, 0, 0),
	}
}

type decideCase struct {
	name   string
	modify func(*passrule.Input)
	want   passrule.Reason
}

func runDecide(t *testing.T, cases []decideCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := admitted()
			tc.modify(&in)
			assert.Equal(t, tc.want, passrule.Decide(in))
		})
	}
}

func TestDecide_Admit(t *testing.T) {
	assert.Equal(t, passrule.Admit, passrule.Decide(admitted()))
}

// spoilAllButEnded makes every later check refuse too, so Ended is seen to
// come first.
func spoilAllButEnded(tb testing.TB, in *passrule.Input) {
	in.GateSiteID = "site_b"
	in.Rules.GateIDs = []string{"gate_9"}
	in.Now = in.ExpectedUntil.Add(24 * time.Hour)
	in.Rules.Daily = daily(tb, "08:00", "09:00")
	in.Rules.SingleUse = true
	in.Uses = 3
}

func TestDecide_Ended(t *testing.T) {
	runDecide(t, []decideCase{
		{"cancelled", func(in *passrule.Input) { in.Status = passrule.Cancelled }, passrule.Ended},
		{"denied", func(in *passrule.Input) { in.Status = passrule.Denied }, passrule.Ended},
		{"no_show", func(in *passrule.Input) { in.Status = passrule.NoShow }, passrule.Ended},
		{"revoked", func(in *passrule.Input) { in.Revoked = true }, passrule.Ended},
		{"revoked while checked in", func(in *passrule.Input) {
			in.Status = passrule.CheckedIn
			in.Revoked = true
		}, passrule.Ended},
		{"cancelled before every other reason", func(in *passrule.Input) {
			spoilAllButEnded(t, in)
			in.Status = passrule.Cancelled
		}, passrule.Ended},
		{"denied before every other reason", func(in *passrule.Input) {
			spoilAllButEnded(t, in)
			in.Status = passrule.Denied
		}, passrule.Ended},
		{"no_show before every other reason", func(in *passrule.Input) {
			spoilAllButEnded(t, in)
			in.Status = passrule.NoShow
		}, passrule.Ended},
		{"revoked before every other reason", func(in *passrule.Input) {
			spoilAllButEnded(t, in)
			in.Revoked = true
		}, passrule.Ended},
		{"revoked before awaiting approval", func(in *passrule.Input) {
			in.Status = passrule.AwaitingApproval
			in.Revoked = true
		}, passrule.Ended},
		// A status the code does not know may be a newer cloud's: fail closed.
		{"unknown status", func(in *passrule.Input) { in.Status = "archived" }, passrule.Ended},
		{"empty status", func(in *passrule.Input) { in.Status = "" }, passrule.Ended},
		// Re-entry is the caller's decision, not an ended pass.
		{"checked_in is not ended", func(in *passrule.Input) { in.Status = passrule.CheckedIn }, passrule.Admit},
		{"checked_out is not ended", func(in *passrule.Input) { in.Status = passrule.CheckedOut }, passrule.Admit},
	})
}

func TestDecide_WrongGate(t *testing.T) {
	runDecide(t, []decideCase{
		{"gate at another site", func(in *passrule.Input) { in.GateSiteID = "site_b" }, passrule.WrongGate},
		{"gate at another site though listed", func(in *passrule.Input) {
			in.GateSiteID = "site_b"
			in.Rules.GateIDs = []string{"gate_1"}
		}, passrule.WrongGate},
		{"gate not in gate_ids", func(in *passrule.Input) {
			in.Rules.GateIDs = []string{"gate_2", "gate_3"}
		}, passrule.WrongGate},
		{"gate last in gate_ids", func(in *passrule.Input) {
			in.Rules.GateIDs = []string{"gate_2", "gate_3", "gate_1"}
		}, passrule.Admit},
		{"empty gate_ids admits any gate at the site", func(in *passrule.Input) {
			in.GateID = "gate_77"
		}, passrule.Admit},
		{"wrong gate before expired", func(in *passrule.Input) {
			in.GateSiteID = "site_b"
			in.Now = in.ExpectedUntil.Add(time.Hour)
		}, passrule.WrongGate},
		{"wrong gate before awaiting approval", func(in *passrule.Input) {
			in.Rules.GateIDs = []string{"gate_2"}
			in.Status = passrule.AwaitingApproval
		}, passrule.WrongGate},
		{"wrong gate before not yet", func(in *passrule.Input) {
			in.Rules.GateIDs = []string{"gate_2"}
			in.Now = in.ExpectedAt.Add(-time.Hour)
		}, passrule.WrongGate},
	})
}

func TestDecide_Window(t *testing.T) {
	at := utc(2026, time.June, 10, 9, 0, 0)
	until := utc(2026, time.June, 10, 17, 0, 0)
	now := func(ts time.Time, before, after int) func(*passrule.Input) {
		return func(in *passrule.Input) {
			in.Now = ts
			in.Rules.Window = passrule.Window{Before: before, After: after}
		}
	}
	runDecide(t, []decideCase{
		{"before 0, a minute early", now(at.Add(-time.Minute), 0, 0), passrule.NotYet},
		{"before 0, a second early", now(at.Add(-time.Second), 0, 0), passrule.NotYet},
		{"before 0, at expected_at", now(at, 0, 0), passrule.Admit},
		{"before 0, a minute after expected_at", now(at.Add(time.Minute), 0, 0), passrule.Admit},
		{"before 15, 16 minutes early", now(at.Add(-16*time.Minute), 15, 0), passrule.NotYet},
		{"before 15, 15 minutes early", now(at.Add(-15*time.Minute), 15, 0), passrule.Admit},
		{"before 15, 14 minutes early", now(at.Add(-14*time.Minute), 15, 0), passrule.Admit},
		{"after 0, a minute before expected_until", now(until.Add(-time.Minute), 0, 0), passrule.Admit},
		{"after 0, at expected_until", now(until, 0, 0), passrule.Admit},
		{"after 0, last instant of the end minute", now(until.Add(time.Minute-time.Nanosecond), 0, 0), passrule.Admit},
		{"after 0, a minute late", now(until.Add(time.Minute), 0, 0), passrule.Expired},
		{"after 30, 29 minutes late", now(until.Add(29*time.Minute), 0, 30), passrule.Admit},
		{"after 30, 30 minutes late", now(until.Add(30*time.Minute), 0, 30), passrule.Admit},
		{"after 30, 31 minutes late", now(until.Add(31*time.Minute), 0, 30), passrule.Expired},
		{"after does not widen the start", now(at.Add(-time.Minute), 0, 30), passrule.NotYet},
		{"before does not widen the end", now(until.Add(time.Minute), 30, 0), passrule.Expired},
		// Seconds in the visit's times do not move the edges off the minute.
		{"start with seconds admits from its minute", func(in *passrule.Input) {
			in.ExpectedAt = at.Add(30 * time.Second)
			in.Now = at
		}, passrule.Admit},
		{"start with seconds, the minute before", func(in *passrule.Input) {
			in.ExpectedAt = at.Add(30 * time.Second)
			in.Now = at.Add(-time.Second)
		}, passrule.NotYet},
		{"end with seconds, next minute", func(in *passrule.Input) {
			in.ExpectedUntil = until.Add(30 * time.Second)
			in.Now = until.Add(time.Minute)
		}, passrule.Expired},
		{"before 1970 the minute rounds down", func(in *passrule.Input) {
			in.ExpectedAt = utc(1969, time.December, 31, 23, 59, 30)
			in.ExpectedUntil = utc(1969, time.December, 31, 23, 59, 30)
			in.Now = utc(1970, time.January, 1, 0, 0, 0)
		}, passrule.Expired},
		{"awaiting approval inside the window", func(in *passrule.Input) {
			in.Status = passrule.AwaitingApproval
		}, passrule.NotYet},
		{"awaiting approval before expired", func(in *passrule.Input) {
			in.Status = passrule.AwaitingApproval
			in.Now = until.Add(time.Hour)
		}, passrule.NotYet},
		{"walk-in admitted long before and after", func(in *passrule.Input) {
			in.ExpectedAt, in.ExpectedUntil = time.Time{}, time.Time{}
			in.Now = utc(2031, time.January, 1, 0, 0, 0)
		}, passrule.Admit},
		{"walk-in admitted in year 1", func(in *passrule.Input) {
			in.ExpectedAt, in.ExpectedUntil = time.Time{}, time.Time{}
			in.Now = time.Time{}.Add(time.Hour)
		}, passrule.Admit},
		{"no start still expires", func(in *passrule.Input) {
			in.ExpectedAt = time.Time{}
			in.Now = until.Add(time.Minute)
		}, passrule.Expired},
		{"no end still not yet", func(in *passrule.Input) {
			in.ExpectedUntil = time.Time{}
			in.Now = at.Add(-time.Minute)
		}, passrule.NotYet},
		{"no end admits years later", func(in *passrule.Input) {
			in.ExpectedUntil = time.Time{}
			in.Now = at.AddDate(5, 0, 0)
		}, passrule.Admit},
		{"not yet before outside hours", func(in *passrule.Input) {
			in.Now = at.Add(-time.Hour)
			in.Rules.Daily = daily(t, "12:00", "13:00")
		}, passrule.NotYet},
		{"expired before outside hours", func(in *passrule.Input) {
			in.Now = until.Add(time.Hour)
			in.Rules.Daily = daily(t, "12:00", "13:00")
		}, passrule.Expired},
	})
}

func TestDecide_Daily(t *testing.T) {
	day := func(from, until string, h, m int) func(*passrule.Input) {
		return func(in *passrule.Input) {
			in.ExpectedAt, in.ExpectedUntil = time.Time{}, time.Time{}
			in.Rules.Daily = daily(t, from, until)
			in.Now = utc(2026, time.June, 10, h, m, 0)
		}
	}
	runDecide(t, []decideCase{
		{"08-18 at 07:59", day("08:00", "18:00", 7, 59), passrule.OutsideHours},
		{"08-18 at 08:00", day("08:00", "18:00", 8, 0), passrule.Admit},
		{"08-18 at 17:59", day("08:00", "18:00", 17, 59), passrule.Admit},
		{"08-18 at 18:00", day("08:00", "18:00", 18, 0), passrule.OutsideHours},
		{"22-06 at 21:59", day("22:00", "06:00", 21, 59), passrule.OutsideHours},
		{"22-06 at 22:00", day("22:00", "06:00", 22, 0), passrule.Admit},
		{"22-06 at 23:59", day("22:00", "06:00", 23, 59), passrule.Admit},
		{"22-06 at 00:00", day("22:00", "06:00", 0, 0), passrule.Admit},
		{"22-06 at 05:59", day("22:00", "06:00", 5, 59), passrule.Admit},
		{"22-06 at 06:00", day("22:00", "06:00", 6, 0), passrule.OutsideHours},
		{"22-06 at noon", day("22:00", "06:00", 12, 0), passrule.OutsideHours},
		{"00:00-23:59 at 23:59", day("00:00", "23:59", 23, 59), passrule.OutsideHours},
		{"23:59-00:00 at 23:59", day("23:59", "00:00", 23, 59), passrule.Admit},
		{"23:59-00:00 at 00:00", day("23:59", "00:00", 0, 0), passrule.OutsideHours},
		// Invalid rules that reach Decide anyway fail closed.
		{"from equals until at from", day("09:00", "09:00", 9, 0), passrule.OutsideHours},
		{"from equals until at noon", day("09:00", "09:00", 12, 0), passrule.OutsideHours},
		{"no daily, walk-in at 03:00", func(in *passrule.Input) {
			in.ExpectedAt, in.ExpectedUntil = time.Time{}, time.Time{}
			in.Now = utc(2026, time.June, 10, 3, 0, 0)
		}, passrule.Admit},
		{"outside hours before used", func(in *passrule.Input) {
			in.Rules.Daily = daily(t, "13:00", "14:00")
			in.Rules.SingleUse = true
			in.Uses = 1
		}, passrule.OutsideHours},
	})
}

// Daily hours are read off the site's wall clock, which jumps on DST days.
// Each Now is a UTC instant, so an implementation reading hours in UTC, in
// Now's own zone or at a fixed offset gets at least one case wrong.
func TestDecide_DST(t *testing.T) {
	london := zone(t, "Europe/London")
	newYork := zone(t, "America/New_York")
	scan := func(loc *time.Location, from, until string, now time.Time) func(*passrule.Input) {
		return func(in *passrule.Input) {
			in.ExpectedAt, in.ExpectedUntil = time.Time{}, time.Time{}
			in.Location = loc
			in.Rules.Daily = daily(t, from, until)
			in.Now = now
		}
	}
	runDecide(t, []decideCase{
		// London springs forward 2026-03-29 01:00 GMT to 02:00 BST (UTC+1).
		{"London spring, 07:59 BST", scan(london, "08:00", "18:00", utc(2026, time.March, 29, 6, 59, 0)), passrule.OutsideHours},
		{"London spring, 08:00 BST", scan(london, "08:00", "18:00", utc(2026, time.March, 29, 7, 0, 0)), passrule.Admit},
		{"London spring, 17:59 BST", scan(london, "08:00", "18:00", utc(2026, time.March, 29, 16, 59, 0)), passrule.Admit},
		{"London spring, 18:00 BST", scan(london, "08:00", "18:00", utc(2026, time.March, 29, 17, 0, 0)), passrule.OutsideHours},
		{"London spring, 00:59 GMT before the gap", scan(london, "01:00", "02:00", utc(2026, time.March, 29, 0, 59, 0)), passrule.OutsideHours},
		{"London spring, hours inside the skipped hour never admit", scan(london, "01:00", "02:00", utc(2026, time.March, 29, 1, 0, 0)), passrule.OutsideHours},
		// London falls back 2026-10-25 02:00 BST to 01:00 GMT (UTC+0).
		{"London fall, 07:59 GMT", scan(london, "08:00", "18:00", utc(2026, time.October, 25, 7, 59, 0)), passrule.OutsideHours},
		{"London fall, 08:00 GMT", scan(london, "08:00", "18:00", utc(2026, time.October, 25, 8, 0, 0)), passrule.Admit},
		{"London fall, first 01:15 BST", scan(london, "01:00", "01:30", utc(2026, time.October, 25, 0, 15, 0)), passrule.Admit},
		{"London fall, first 01:45 BST", scan(london, "01:00", "01:30", utc(2026, time.October, 25, 0, 45, 0)), passrule.OutsideHours},
		{"London fall, second 01:15 GMT", scan(london, "01:00", "01:30", utc(2026, time.October, 25, 1, 15, 0)), passrule.Admit},
		{"London fall night, 05:59 GMT", scan(london, "22:00", "06:00", utc(2026, time.October, 25, 5, 59, 0)), passrule.Admit},
		{"London fall night, 06:00 GMT", scan(london, "22:00", "06:00", utc(2026, time.October, 25, 6, 0, 0)), passrule.OutsideHours},
		// New York springs forward 2026-03-08 02:00 EST to 03:00 EDT (UTC-4).
		{"New York spring, 07:59 EDT", scan(newYork, "08:00", "18:00", utc(2026, time.March, 8, 11, 59, 0)), passrule.OutsideHours},
		{"New York spring, 08:00 EDT", scan(newYork, "08:00", "18:00", utc(2026, time.March, 8, 12, 0, 0)), passrule.Admit},
		{"New York spring night, 21:59 EDT", scan(newYork, "22:00", "06:00", utc(2026, time.March, 9, 1, 59, 0)), passrule.OutsideHours},
		{"New York spring night, 22:00 EDT", scan(newYork, "22:00", "06:00", utc(2026, time.March, 9, 2, 0, 0)), passrule.Admit},
		// New York falls back 2026-11-01 02:00 EDT to 01:00 EST (UTC-5).
		{"New York fall, 07:59 EST", scan(newYork, "08:00", "18:00", utc(2026, time.November, 1, 12, 59, 0)), passrule.OutsideHours},
		{"New York fall, 08:00 EST", scan(newYork, "08:00", "18:00", utc(2026, time.November, 1, 13, 0, 0)), passrule.Admit},
		{"New York fall, 17:59 EST", scan(newYork, "08:00", "18:00", utc(2026, time.November, 1, 22, 59, 0)), passrule.Admit},
		{"New York fall, 18:00 EST", scan(newYork, "08:00", "18:00", utc(2026, time.November, 1, 23, 0, 0)), passrule.OutsideHours},
	})
}

func TestDecide_NilLocationIsUTC(t *testing.T) {
	// An appliance's own zone may be set to anything; nil must not mean it.
	// Not parallel: it changes time.Local for the test's length.
	local := time.Local
	time.Local = time.FixedZone("UTC+5", 5*60*60)
	t.Cleanup(func() { time.Local = local })

	// 06:30 UTC is 07:30 in Now's own zone (UTC+1): only UTC is outside.
	plusOne := time.FixedZone("UTC+1", 60*60)
	runDecide(t, []decideCase{
		{"nil location reads UTC, not Now's zone", func(in *passrule.Input) {
			in.ExpectedAt, in.ExpectedUntil = time.Time{}, time.Time{}
			in.Rules.Daily = daily(t, "07:00", "18:00")
			in.Now = time.Date(2026, time.January, 10, 7, 30, 0, 0, plusOne)
		}, passrule.OutsideHours},
		{"nil location at 07:00 UTC", func(in *passrule.Input) {
			in.ExpectedAt, in.ExpectedUntil = time.Time{}, time.Time{}
			in.Rules.Daily = daily(t, "07:00", "18:00")
			in.Now = time.Date(2026, time.January, 10, 8, 0, 0, 0, plusOne)
		}, passrule.Admit},
		{"site zone wins over Now's zone", func(in *passrule.Input) {
			in.ExpectedAt, in.ExpectedUntil = time.Time{}, time.Time{}
			in.Location = time.FixedZone("UTC-3", -3*60*60)
			in.Rules.Daily = daily(t, "07:00", "18:00")
			in.Now = time.Date(2026, time.January, 10, 11, 0, 0, 0, plusOne) // 07:00 at UTC-3
		}, passrule.Admit},
	})
}

func TestDecide_Used(t *testing.T) {
	runDecide(t, []decideCase{
		{"single use, unused", func(in *passrule.Input) { in.Rules.SingleUse = true }, passrule.Admit},
		{"single use, used once", func(in *passrule.Input) {
			in.Rules.SingleUse = true
			in.Uses = 1
		}, passrule.Used},
		{"single use, used twice", func(in *passrule.Input) {
			in.Rules.SingleUse = true
			in.Uses = 2
		}, passrule.Used},
		{"multi use, used five times", func(in *passrule.Input) { in.Uses = 5 }, passrule.Admit},
	})
}

// TestDecide_Order sets off the reasons two at a time and expects the one
// Reasons lists first, so Reasons documents the order Decide really uses.
func TestDecide_Order(t *testing.T) {
	trigger := map[passrule.Reason]func(*passrule.Input){
		passrule.Ended:     func(in *passrule.Input) { in.Revoked = true },
		passrule.WrongGate: func(in *passrule.Input) { in.GateSiteID = "site_b" },
		// awaiting_approval, so not_yet can coexist with a Now past the end.
		passrule.NotYet:       func(in *passrule.Input) { in.Status = passrule.AwaitingApproval },
		passrule.Expired:      func(in *passrule.Input) { in.Now = in.ExpectedUntil.Add(time.Hour) },
		passrule.OutsideHours: func(in *passrule.Input) { in.Rules.Daily = daily(t, "03:00", "04:00") },
		passrule.Used: func(in *passrule.Input) {
			in.Rules.SingleUse = true
			in.Uses = 1
		},
	}
	reasons := passrule.Reasons()
	require.Len(t, reasons, len(trigger))
	for i, first := range reasons {
		require.Contains(t, trigger, first)
		t.Run(string(first)+" alone", func(t *testing.T) {
			in := admitted()
			trigger[first](&in)
			assert.Equal(t, first, passrule.Decide(in))
		})
		for _, later := range reasons[i+1:] {
			t.Run(string(first)+" before "+string(later), func(t *testing.T) {
				in := admitted()
				trigger[later](&in)
				trigger[first](&in)
				assert.Equal(t, first, passrule.Decide(in))
			})
		}
	}
}

func benchInput(tb testing.TB) passrule.Input {
	return passrule.Input{
		Rules: passrule.Rules{
			Daily:   daily(tb, "07:00", "19:00"),
			Window:  passrule.Window{Before: 30, After: 60},
			GateIDs: []string{"gate_01jrx0000000000000000000a1", "gate_01jrx0000000000000000000a2", "gate_01jrx0000000000000000000a3"},
		},
		Status:        passrule.Expected,
		ExpectedAt:    utc(2026, time.March, 30, 8, 0, 0),
		ExpectedUntil: utc(2026, time.April, 3, 17, 0, 0),
		VisitSiteID:   "site_01jrx00000000000000000000s",
		GateID:        "gate_01jrx0000000000000000000a3",
		GateSiteID:    "site_01jrx00000000000000000000s",
		Uses:          2,
		Location:      zone(tb, "Europe/London"),
		Now:           utc(2026, time.April, 1, 9, 15, 42),
	}
}

// The gate decides on every scan from an immutable snapshot; garbage there
// would show up as pauses at the turnstile.
func TestDecide_DoesNotAllocate(t *testing.T) {
	in := benchInput(t)
	require.Equal(t, passrule.Admit, passrule.Decide(in))
	assert.Zero(t, testing.AllocsPerRun(100, func() { passrule.Decide(in) }))
}

func BenchmarkDecide(b *testing.B) {
	in := benchInput(b)
	if got := passrule.Decide(in); got != passrule.Admit {
		b.Fatalf("Decide = %q, want admit so that every check runs", got)
	}
	b.ReportAllocs()
	for b.Loop() {
		passrule.Decide(in)
	}
}

func TestReason_Overridable(t *testing.T) {
	for _, tc := range []struct {
		reason passrule.Reason
		want   bool
	}{
		{passrule.Admit, false},
		{passrule.Ended, false},
		{passrule.WrongGate, true},
		{passrule.NotYet, true},
		{passrule.Expired, true},
		{passrule.OutsideHours, true},
		{passrule.Used, true},
		{"something_new", false},
	} {
		t.Run(string(tc.reason), func(t *testing.T) {
			assert.Equal(t, tc.want, tc.reason.Overridable())
		})
	}
}

func TestStatus_Valid(t *testing.T) {
	for _, s := range []passrule.Status{passrule.Expected, passrule.AwaitingApproval, passrule.CheckedIn,
		passrule.CheckedOut, passrule.Denied, passrule.Cancelled, passrule.NoShow} {
		assert.True(t, s.Valid(), s)
	}
	for _, s := range []passrule.Status{"", "archived", "Expected", "no-show"} {
		assert.False(t, s.Valid(), s)
	}
}

func TestParseClock(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want passrule.Clock
	}{
		{"00:00", 0},
		{"00:01", 1},
		{"07:00", 7 * 60},
		{"12:34", 12*60 + 34},
		{"23:59", 1439},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := passrule.ParseClock(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	for _, in := range []string{
		"24:00", "7:00", "07:60", "0700", "", "07:00 ", " 07:00", "-1:00", "07-00",
		"0a:00", "07:0x", "99:99", "07:00:00", "07:", "+7:00", "０7:00",
	} {
		t.Run("bad "+in, func(t *testing.T) {
			_, err := passrule.ParseClock(in)
			assert.Error(t, err)
		})
	}
}

func TestClock_String(t *testing.T) {
	for _, tc := range []struct {
		c    passrule.Clock
		want string
	}{
		{0, "00:00"},
		{9*60 + 5, "09:05"},
		{10*60 + 30, "10:30"},
		{passrule.MaxClock, "23:59"},
		{-1, "%!Clock(-1)"},
		{1440, "%!Clock(1440)"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.c.String())
		})
	}
}

func TestClock_Text(t *testing.T) {
	type body struct {
		From passrule.Clock `json:"from"`
	}
	out, err := json.Marshal(body{From: 7*60 + 30})
	require.NoError(t, err)
	assert.JSONEq(t, `{"from":"07:30"}`, string(out))

	var got body
	require.NoError(t, json.Unmarshal([]byte(`{"from":"22:05"}`), &got))
	assert.Equal(t, passrule.Clock(22*60+5), got.From)

	assert.Error(t, json.Unmarshal([]byte(`{"from":"24:00"}`), &got))
	assert.Error(t, json.Unmarshal([]byte(`{"from":420}`), &got))
	_, err = json.Marshal(body{From: 1440})
	assert.Error(t, err)
}

func FuzzParseClock(f *testing.F) {
	for _, s := range []string{"00:00", "07:30", "23:59", "24:00", "7:00", "07:60", "", "-1:00", "07:00 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := passrule.ParseClock(s)
		if err != nil {
			return
		}
		if !c.Valid() {
			t.Fatalf("ParseClock(%q) = %d, out of range", s, int(c))
		}
		if got := c.String(); got != s {
			t.Fatalf("ParseClock(%q).String() = %q", s, got)
		}
	})
}

func TestRules_Validate(t *testing.T) {
	gates := func(n int) []string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = "gate_" + string(rune('a'+i))
		}
		return ids
	}
	for _, tc := range []struct {
		name   string
		rules  passrule.Rules
		fields []string
	}{
		{"zero rules", passrule.Rules{}, nil},
		{"everything at its bounds", passrule.Rules{
			Daily:     &passrule.Daily{From: 0, Until: passrule.MaxClock},
			Window:    passrule.Window{Before: passrule.MaxWindowMinutes, After: passrule.MaxWindowMinutes},
			SingleUse: true,
			GateIDs:   gates(passrule.MaxGateIDs),
		}, nil},
		{"spanning midnight", passrule.Rules{Daily: daily(t, "22:00", "06:00")}, nil},
		{"from equals until", passrule.Rules{Daily: daily(t, "09:00", "09:00")}, []string{"daily"}},
		{"from out of range", passrule.Rules{Daily: &passrule.Daily{From: -1, Until: 60}}, []string{"daily.from"}},
		{"until out of range", passrule.Rules{Daily: &passrule.Daily{From: 60, Until: 1440}}, []string{"daily.until"}},
		{"both out of range and equal", passrule.Rules{Daily: &passrule.Daily{From: 1440, Until: 1440}},
			[]string{"daily.from", "daily.until"}},
		{"before negative", passrule.Rules{Window: passrule.Window{Before: -1}}, []string{"window.before"}},
		{"before over a week", passrule.Rules{Window: passrule.Window{Before: passrule.MaxWindowMinutes + 1}}, []string{"window.before"}},
		{"after negative", passrule.Rules{Window: passrule.Window{After: -1}}, []string{"window.after"}},
		{"after over a week", passrule.Rules{Window: passrule.Window{After: passrule.MaxWindowMinutes + 1}}, []string{"window.after"}},
		{"too many gates", passrule.Rules{GateIDs: gates(passrule.MaxGateIDs + 1)}, []string{"gate_ids"}},
		{"too many gates, items not checked", passrule.Rules{GateIDs: append(gates(passrule.MaxGateIDs), "")}, []string{"gate_ids"}},
		{"repeated gate", passrule.Rules{GateIDs: []string{"gate_a", "gate_b", "gate_a", "gate_c", "gate_b"}},
			[]string{"gate_ids[2]", "gate_ids[4]"}},
		{"empty gate", passrule.Rules{GateIDs: []string{"gate_a", ""}}, []string{"gate_ids[1]"}},
		{"every problem at once", passrule.Rules{
			Daily:   daily(t, "10:00", "10:00"),
			Window:  passrule.Window{Before: -5, After: 1 << 20},
			GateIDs: []string{"gate_a", "gate_a", "", "gate_b"},
		}, []string{"daily", "window.before", "window.after", "gate_ids[1]", "gate_ids[2]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.rules.Validate()
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
				assert.NotEmpty(t, e.Message, e.Field)
			}
			assert.Equal(t, tc.fields, fields)
		})
	}
}

func TestRules_ValidateMessages(t *testing.T) {
	errs := passrule.Rules{GateIDs: []string{"gate_a", "gate_b", "gate_a"}, Window: passrule.Window{After: -1}}.Validate()
	require.Len(t, errs, 2)
	assert.Equal(t, "window.after: must be from 0 to 10080 minutes", errs[0].Error())
	assert.Equal(t, "gate_ids[2]: repeats gate_ids[0]", errs[1].Error())
}

func TestEndOfDay(t *testing.T) {
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		at   time.Time
		loc  *time.Location
		want time.Time
	}{
		{"UTC", time.Date(2026, 3, 9, 8, 30, 0, 0, time.UTC), time.UTC, time.Date(2026, 3, 9, 23, 59, 59, 999999000, time.UTC)},
		{"nil is UTC", time.Date(2026, 3, 9, 8, 30, 0, 0, time.UTC), nil, time.Date(2026, 3, 9, 23, 59, 59, 999999000, time.UTC)},
		// 23:30 UTC on the 28th of June is already the 29th in London (BST).
		{"the site's day, not UTC's", time.Date(2026, 6, 28, 23, 30, 0, 0, time.UTC), london, time.Date(2026, 6, 29, 22, 59, 59, 999999000, time.UTC)},
		// The clocks go back on the 25th of October 2026: a 25-hour day.
		{"a long day", time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), london, time.Date(2026, 10, 25, 23, 59, 59, 999999000, time.UTC)},
	} {
		if got := passrule.EndOfDay(tt.at, tt.loc); !got.Equal(tt.want) || got.Location() != time.UTC {
			t.Errorf("%s: EndOfDay = %v, want %v", tt.name, got, tt.want)
		}
	}
}
