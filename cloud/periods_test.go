package cloud

import (
	"fmt"
	"slices"
	"testing"
	"time"
	_ "time/tzdata" // the zones below must not depend on the machine's zoneinfo
)

// Expectations here come from time.Date arithmetic or are written out by
// hand (checked against an independent calendar), never from the code
// under test.

func periodDay(y int, m time.Month, d int) Date { return Date{Year: y, Month: m, Day: d} }

// periodUTC is the independent way to name a day: midnight UTC by time.Date.
func periodUTC(d Date) time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC) }

// periodDayCount counts the days from a to b inclusive with time arithmetic.
func periodDayCount(a, b Date) int { return int(periodUTC(b).Sub(periodUTC(a))/(24*time.Hour)) + 1 }

func periodLoadLocation(tb testing.TB, name string) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatalf("load %s: %v", name, err)
	}
	return loc
}

func TestParseDate(t *testing.T) {
	good := []struct {
		in   string
		want Date
	}{
		{"2026-02-03", periodDay(2026, time.February, 3)},
		{"2024-02-29", periodDay(2024, time.February, 29)},
		{"2000-02-29", periodDay(2000, time.February, 29)}, // divisible by 400: leap
		{"2026-12-31", periodDay(2026, time.December, 31)},
		{"2026-04-30", periodDay(2026, time.April, 30)},
		{"0001-01-01", periodDay(1, time.January, 1)},
		{"9999-12-31", periodDay(9999, time.December, 31)},
	}
	for _, tc := range good {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDate(tc.in)
			if err != nil {
				t.Fatalf("ParseDate(%q): %v", tc.in, err)
			}
			if got != tc.want {
				t.Errorf("ParseDate(%q) = %#v, want %#v", tc.in, got, tc.want)
			}
			if got.String() != tc.in {
				t.Errorf("String() = %q, want %q", got.String(), tc.in)
			}
		})
	}

	bad := []string{
		"2026-13-01", "2026-00-10", "2026-01-00", "2026-01-32",
		"2026-02-30", "2025-02-29", "1900-02-29", "2026-04-31",
		"2026-2-3", "26-02-03", "02026-02-03", "2026/02/03", "20260203",
		"", "2026-02-03T00:00:00Z", " 2026-02-03", "2026-02-03 ", "2026-02-03\n",
		"+2026-02-03", "-2026-02-03", "2026-+2-03", "2026-02-+3", "abcd-ef-gh",
	}
	for _, in := range bad {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			if got, err := ParseDate(in); err == nil {
				t.Errorf("ParseDate(%q) = %v, want an error", in, got)
			}
		})
	}
}

func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"2026-02-03", "2024-02-29", "2025-02-29", "2026-2-3", "", " 2026-02-03"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDate(s)
		if err != nil {
			return
		}
		// Strict: whatever is accepted is exactly the canonical form of a
		// day that exists.
		if d.String() != s {
			t.Errorf("ParseDate(%q) = %v, which prints differently", s, d)
		}
		y, m, day := periodUTC(d).Date()
		if (Date{y, m, day}) != d {
			t.Errorf("ParseDate(%q) = %#v, not a calendar day", s, d)
		}
	})
}

func TestDate_String(t *testing.T) {
	for _, tc := range []struct {
		d    Date
		want string
	}{
		{periodDay(2026, time.November, 16), "2026-11-16"},
		{periodDay(2024, time.February, 9), "2024-02-09"},
		{periodDay(987, time.January, 1), "0987-01-01"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestDateOf_Location(t *testing.T) {
	tokyo := periodLoadLocation(t, "Asia/Tokyo")
	la := periodLoadLocation(t, "America/Los_Angeles")
	instant := time.Date(2025, time.December, 31, 20, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		t    time.Time
		want Date
	}{
		{instant, periodDay(2025, time.December, 31)},
		{instant.In(tokyo), periodDay(2026, time.January, 1)}, // 05:00 the next day
		{instant.In(la), periodDay(2025, time.December, 31)},  // 12:00
		{time.Date(2024, time.March, 1, 0, 0, 0, 0, la).In(time.UTC), periodDay(2024, time.March, 1)},
		{time.Date(2024, time.March, 1, 0, 0, 0, 0, la).In(tokyo), periodDay(2024, time.March, 1)},
		{time.Date(2024, time.March, 1, 0, 0, 0, 0, tokyo).In(la), periodDay(2024, time.February, 29)},
	} {
		if got := DateOf(tc.t); got != tc.want {
			t.Errorf("DateOf(%v) = %v, want %v", tc.t, got, tc.want)
		}
	}
}

func TestDate_AddDaysDaysBetweenWeekday(t *testing.T) {
	starts := []Date{
		periodDay(2024, time.January, 31), periodDay(2024, time.February, 28), periodDay(2024, time.February, 29),
		periodDay(2025, time.February, 28), periodDay(2024, time.April, 30), periodDay(2024, time.December, 31),
		periodDay(1999, time.December, 31), periodDay(2100, time.February, 28),
	}
	for _, d := range starts {
		for _, n := range []int{-800, -366, -365, -31, -29, -1, 0, 1, 2, 28, 29, 30, 31, 365, 366, 1000} {
			want := periodUTC(d).AddDate(0, 0, n)
			got := d.AddDays(n)
			if !periodUTC(got).Equal(want) {
				t.Errorf("%v.AddDays(%d) = %v, want %v", d, n, got, want.Format(time.DateOnly))
			}
			if got := DaysBetween(d, got); got != n {
				t.Errorf("DaysBetween(%v, %v.AddDays(%d)) = %d, want %d", d, d, n, got, n)
			}
			if got.Weekday() != want.Weekday() {
				t.Errorf("%v.Weekday() = %v, want %v", got, got.Weekday(), want.Weekday())
			}
			if !got.Time().Equal(want) || got.Time().Location() != time.UTC {
				t.Errorf("%v.Time() = %v, want %v", got, got.Time(), want)
			}
		}
	}
	if got := periodDay(2026, time.November, 16).Weekday(); got != time.Monday {
		t.Errorf("2026-11-16 is a %v, want Monday", got)
	}
}

func TestDate_Compare(t *testing.T) {
	days := []Date{ // ascending, so index order is the truth
		periodDay(2023, time.December, 31), periodDay(2024, time.January, 1), periodDay(2024, time.January, 2),
		periodDay(2024, time.February, 1), periodDay(2024, time.February, 29), periodDay(2024, time.October, 1),
		periodDay(2024, time.October, 10), periodDay(2025, time.January, 1),
	}
	for i, a := range days {
		for j, b := range days {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := a.Compare(b); got != want {
				t.Errorf("%v.Compare(%v) = %d, want %d", a, b, got, want)
			}
			if got := a.Before(b); got != (i < j) {
				t.Errorf("%v.Before(%v) = %v", a, b, got)
			}
			if got := a.After(b); got != (i > j) {
				t.Errorf("%v.After(%v) = %v", a, b, got)
			}
		}
	}
}

func TestDate_IsZero(t *testing.T) {
	if !(Date{}).IsZero() {
		t.Error("Date{}.IsZero() = false")
	}
	for _, d := range []Date{periodDay(2026, time.January, 1), {Year: 1}, {Month: time.January}, {Day: 1}} {
		if d.IsZero() {
			t.Errorf("%#v.IsZero() = true", d)
		}
	}
}

// TestDate_Start_EveryDay checks the definition of Start for every day of
// four years in zones with and without daylight saving, including ones
// whose clocks skip or repeat midnight: the start shows the day, and the
// second before it shows the day before.
func TestDate_Start_EveryDay(t *testing.T) {
	zones := []string{
		"UTC", "Europe/London", "America/New_York", "Australia/Sydney", "Asia/Kolkata",
		"America/Santiago", "Asia/Beirut", "America/Havana", "Pacific/Chatham",
	}
	for _, name := range zones {
		t.Run(name, func(t *testing.T) {
			loc := periodLoadLocation(t, name)
			for day := time.Date(2024, time.January, 1, 0, 0, 0, 0, time.UTC); day.Year() < 2028; day = day.AddDate(0, 0, 1) {
				d := DateOf(day)
				prev := DateOf(day.AddDate(0, 0, -1))
				s := d.Start(loc)
				if s.Location() != loc {
					t.Fatalf("%v.Start: location %v, want %v", d, s.Location(), loc)
				}
				if s.Nanosecond() != 0 {
					t.Fatalf("%v.Start = %v, not on a second", d, s)
				}
				if got := DateOf(s); got != d {
					t.Errorf("%v.Start = %v, which is on %v", d, s, got)
				}
				if got := DateOf(s.Add(-time.Second)); got != prev {
					t.Errorf("%v.Start = %v, but a second earlier is %v, not %v", d, s, got, prev)
				}
			}
		})
	}
}

// TestDate_Start_MidnightChanges pins the days whose midnight is skipped or
// repeated (from the tz database; America/Santiago and Asia/Beirut skip it,
// America/Havana repeats it) and the ordinary DST days of the zones sites
// use most.
func TestDate_Start_MidnightChanges(t *testing.T) {
	for _, tc := range []struct {
		zone       string
		d          Date
		wantClock  string // local, 15:04
		wantOffset int    // hours east of UTC
	}{
		{"America/Santiago", periodDay(2026, time.September, 6), "01:00", -3}, // 23:59:59 -04, then 01:00 -03
		{"America/Santiago", periodDay(2024, time.September, 8), "01:00", -3},
		{"America/Santiago", periodDay(2026, time.September, 5), "00:00", -4},
		{"America/Santiago", periodDay(2026, time.September, 7), "00:00", -3},
		{"America/Santiago", periodDay(2026, time.April, 5), "00:00", -4}, // 23:59:59 -03 on the 4th, then 23:00 -04
		{"Asia/Beirut", periodDay(2026, time.March, 29), "01:00", 3},      // 23:59:59 +02, then 01:00 +03
		{"Asia/Beirut", periodDay(2024, time.March, 31), "01:00", 3},
		{"Asia/Beirut", periodDay(2026, time.March, 30), "00:00", 3},
		{"America/Havana", periodDay(2026, time.March, 8), "01:00", -4},    // 23:59:59 -05, then 01:00 -04
		{"America/Havana", periodDay(2026, time.November, 1), "00:00", -4}, // 00:59:59 -04, then 00:00 -05: the first midnight
		{"Europe/London", periodDay(2026, time.March, 29), "00:00", 0},     // changes at 01:00
		{"Europe/London", periodDay(2026, time.October, 26), "00:00", 0},
		{"America/New_York", periodDay(2026, time.March, 8), "00:00", -5}, // changes at 02:00
		{"America/New_York", periodDay(2026, time.November, 2), "00:00", -5},
		{"Australia/Sydney", periodDay(2026, time.April, 5), "00:00", 11}, // changes at 03:00
		{"Australia/Sydney", periodDay(2026, time.October, 5), "00:00", 11},
	} {
		t.Run(tc.zone+"/"+tc.d.String(), func(t *testing.T) {
			loc := periodLoadLocation(t, tc.zone)
			s := tc.d.Start(loc)
			if got := s.Format("15:04"); got != tc.wantClock {
				t.Errorf("Start = %v, local clock %s, want %s", s, got, tc.wantClock)
			}
			if _, off := s.Zone(); off != tc.wantOffset*3600 {
				t.Errorf("Start = %v, offset %ds, want %dh", s, off, tc.wantOffset)
			}
			if got := DateOf(s); got != tc.d {
				t.Errorf("Start = %v, on %v", s, got)
			}
		})
	}
}

// TestPeriodSpan_ClosesAt_DST checks that a period's length in hours at a
// site is its days times 24, one less or one more when the clocks change
// during it, and that ClosesAt is the next day's first instant even where
// that is not midnight.
func TestPeriodSpan_ClosesAt_DST(t *testing.T) {
	weekMon := PeriodRules{Kind: PeriodWeekly, Weekday: time.Monday}
	weekSun := PeriodRules{Kind: PeriodWeekly, Weekday: time.Sunday}
	fortnight := PeriodRules{Kind: PeriodFortnightly, Weekday: time.Monday, Anchor: periodDay(2026, time.January, 5)}
	month := PeriodRules{Kind: PeriodMonthly, MonthDay: 1}
	for _, tc := range []struct {
		name       string
		zone       string
		rules      PeriodRules
		day        Date
		wantShift  int    // hours the clocks change by during the period: -1 (lost), 0, +1
		wantCloses string // local, 2006-01-02 15:04
	}{
		{"London spring", "Europe/London", weekMon, periodDay(2026, time.March, 25), -1, "2026-03-30 00:00"},
		{"London autumn", "Europe/London", weekMon, periodDay(2026, time.October, 21), +1, "2026-10-26 00:00"},
		{"London summer", "Europe/London", weekMon, periodDay(2026, time.June, 10), 0, "2026-06-15 00:00"},
		{"London fortnight", "Europe/London", fortnight, periodDay(2026, time.March, 25), -1, "2026-03-30 00:00"},
		{"London month", "Europe/London", month, periodDay(2026, time.March, 25), -1, "2026-04-01 00:00"},
		{"New York spring", "America/New_York", weekMon, periodDay(2026, time.March, 4), -1, "2026-03-09 00:00"},
		{"New York autumn", "America/New_York", weekMon, periodDay(2026, time.October, 28), +1, "2026-11-02 00:00"},
		{"Sydney autumn", "Australia/Sydney", weekMon, periodDay(2026, time.April, 1), +1, "2026-04-06 00:00"},
		{"Sydney spring", "Australia/Sydney", weekMon, periodDay(2026, time.October, 1), -1, "2026-10-05 00:00"},
		{"Sydney month", "Australia/Sydney", month, periodDay(2026, time.October, 1), -1, "2026-11-01 00:00"},
		// 2026-09-06 has no midnight in Santiago: it starts at 01:00.
		{"Santiago ends before the skipped midnight", "America/Santiago", weekSun, periodDay(2026, time.September, 1), 0, "2026-09-06 01:00"},
		{"Santiago starts at the skipped midnight", "America/Santiago", weekSun, periodDay(2026, time.September, 9), -1, "2026-09-13 00:00"},
		{"Santiago spring", "America/Santiago", weekMon, periodDay(2026, time.September, 2), -1, "2026-09-07 00:00"},
		{"Santiago autumn", "America/Santiago", weekMon, periodDay(2026, time.April, 1), +1, "2026-04-06 00:00"},
		// 2026-03-29 has no midnight in Beirut.
		{"Beirut ends before the skipped midnight", "Asia/Beirut", weekSun, periodDay(2026, time.March, 25), 0, "2026-03-29 01:00"},
		{"Beirut starts at the skipped midnight", "Asia/Beirut", weekSun, periodDay(2026, time.March, 29), -1, "2026-04-05 00:00"},
		{"Beirut spring", "Asia/Beirut", weekMon, periodDay(2026, time.March, 25), -1, "2026-03-30 00:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc := periodLoadLocation(t, tc.zone)
			p := tc.rules.Containing(tc.day)
			closes := p.ClosesAt(loc)
			if got := closes.In(loc).Format("2006-01-02 15:04"); got != tc.wantCloses {
				t.Errorf("%s ClosesAt = %s, want %s", p.Label, got, tc.wantCloses)
			}
			wantHours := periodDayCount(p.StartsOn, p.EndsOn)*24 + tc.wantShift
			if got := closes.Sub(p.StartsOn.Start(loc)); got != time.Duration(wantHours)*time.Hour {
				t.Errorf("%s lasts %v at %s, want %dh", p.Label, got, tc.zone, wantHours)
			}
			// The period's last second is in it; ClosesAt is the next day.
			if got := DateOf(closes.Add(-time.Second).In(loc)); got != p.EndsOn {
				t.Errorf("a second before ClosesAt is %v, want %v", got, p.EndsOn)
			}
			if got := DateOf(closes.In(loc)); got != p.EndsOn.AddDays(1) {
				t.Errorf("ClosesAt is on %v, want the day after %v", got, p.EndsOn)
			}
		})
	}
}

// TestPeriodRules_Walk walks each kind's periods with After across 2024 (a
// leap year) and 2025 and over three year ends, and checks the walk with
// time.Date arithmetic: no gap, no overlap, the right lengths and start
// days, every day in exactly one period, and Containing and Spans agreeing
// with the walk.
func TestPeriodRules_Walk(t *testing.T) {
	from, to := periodDay(2024, time.January, 1), periodDay(2025, time.December, 31)
	for _, tc := range []struct {
		name  string
		rules PeriodRules
		// The period holding 2024-02-29, worked out by hand.
		leapStart, leapEnd Date
	}{
		{"weekly from Monday", PeriodRules{Kind: PeriodWeekly, Weekday: time.Monday, PayrollDays: 3},
			periodDay(2024, time.February, 26), periodDay(2024, time.March, 3)},
		{"weekly from Sunday", PeriodRules{Kind: PeriodWeekly, Weekday: time.Sunday, PayrollDays: -2},
			periodDay(2024, time.February, 25), periodDay(2024, time.March, 2)},
		{"fortnightly anchored after the walk", PeriodRules{Kind: PeriodFortnightly, Weekday: time.Monday, Anchor: periodDay(2026, time.January, 5), PayrollDays: 5},
			periodDay(2024, time.February, 19), periodDay(2024, time.March, 3)},
		{"fortnightly anchored inside the walk", PeriodRules{Kind: PeriodFortnightly, Weekday: time.Thursday, Anchor: periodDay(2024, time.July, 4), PayrollDays: 0},
			periodDay(2024, time.February, 29), periodDay(2024, time.March, 13)},
		{"monthly from the 1st", PeriodRules{Kind: PeriodMonthly, MonthDay: 1, PayrollDays: 62},
			periodDay(2024, time.February, 1), periodDay(2024, time.February, 29)},
		{"monthly from the 16th", PeriodRules{Kind: PeriodMonthly, MonthDay: 16, PayrollDays: -28},
			periodDay(2024, time.February, 16), periodDay(2024, time.March, 15)},
		{"monthly from the 28th", PeriodRules{Kind: PeriodMonthly, MonthDay: 28, PayrollDays: 10},
			periodDay(2024, time.February, 28), periodDay(2024, time.March, 27)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.rules
			// Start in December 2023 so the walk crosses into 2024.
			walk := []PeriodSpan{r.Containing(periodDay(2023, time.December, 20))}
			for last := walk[0]; !last.EndsOn.After(periodDay(2026, time.January, 10)); {
				next := r.After(last.EndsOn)
				if !next.EndsOn.After(last.EndsOn) {
					t.Fatalf("After(%v) = %+v, which does not move on", last.EndsOn, next)
				}
				last = next
				walk = append(walk, last)
			}

			covered := map[Date]int{}
			for i, p := range walk {
				if i > 0 {
					prev := walk[i-1]
					if want := periodUTC(prev.EndsOn).AddDate(0, 0, 1); !periodUTC(p.StartsOn).Equal(want) {
						t.Errorf("%s starts on %v, want the day after %s: %s", p.Label, p.StartsOn, prev.Label, want.Format(time.DateOnly))
					}
				}
				periodCheckNatural(t, r, p)
				for d := periodUTC(p.StartsOn); !d.After(periodUTC(p.EndsOn)); d = d.AddDate(0, 0, 1) {
					covered[DateOf(d)]++
				}
			}

			for d := periodUTC(from); !d.After(periodUTC(to)); d = d.AddDate(0, 0, 1) {
				day := DateOf(d)
				if n := covered[day]; n != 1 {
					t.Errorf("%v is in %d periods, want 1", day, n)
				}
				i := slices.IndexFunc(walk, func(p PeriodSpan) bool {
					return !d.Before(periodUTC(p.StartsOn)) && !d.After(periodUTC(p.EndsOn))
				})
				if got := r.Containing(day); i < 0 || got != walk[i] {
					t.Errorf("Containing(%v) = %+v, want the walk's period %d", day, got, i)
				}
			}

			leap := r.Containing(periodDay(2024, time.February, 29))
			if leap.StartsOn != tc.leapStart || leap.EndsOn != tc.leapEnd {
				t.Errorf("2024-02-29 is in %v..%v, want %v..%v", leap.StartsOn, leap.EndsOn, tc.leapStart, tc.leapEnd)
			}

			if got := r.Spans(periodDay(2023, time.December, 20), len(walk)); !slices.Equal(got, walk) {
				t.Errorf("Spans differs from the walk:\n got %+v\nwant %+v", got, walk)
			}
		})
	}
}

// periodCheckNatural checks p against r with time.Date arithmetic.
func periodCheckNatural(tb testing.TB, r PeriodRules, p PeriodSpan) {
	tb.Helper()
	start, end := periodUTC(p.StartsOn), periodUTC(p.EndsOn)
	days := periodDayCount(p.StartsOn, p.EndsOn)
	if p.Kind != r.Kind {
		tb.Errorf("%s: kind %q, want %q", p.Label, p.Kind, r.Kind)
	}
	if want := end.AddDate(0, 0, r.PayrollDays); !periodUTC(p.PayrollOn).Equal(want) {
		tb.Errorf("%s: payroll on %v, want %s", p.Label, p.PayrollOn, want.Format(time.DateOnly))
	}
	switch r.Kind {
	case PeriodWeekly, PeriodFortnightly:
		want := 7
		if r.Kind == PeriodFortnightly {
			want = 14
			if off := int(start.Sub(periodUTC(r.Anchor)) / (24 * time.Hour)); off%14 != 0 {
				tb.Errorf("%s starts %d days from the anchor %v, not a multiple of 14", p.Label, off, r.Anchor)
			}
		}
		if days != want {
			tb.Errorf("%s: %d days, want %d", p.Label, days, want)
		}
		if start.Weekday() != r.Weekday {
			tb.Errorf("%s starts on a %v, want %v", p.Label, start.Weekday(), r.Weekday)
		}
	case PeriodMonthly:
		if p.StartsOn.Day != r.MonthDay {
			tb.Errorf("%s starts on day %d, want %d", p.Label, p.StartsOn.Day, r.MonthDay)
		}
		nextStart := time.Date(start.Year(), start.Month()+1, r.MonthDay, 0, 0, 0, 0, time.UTC)
		if want := nextStart.AddDate(0, 0, -1); !end.Equal(want) {
			tb.Errorf("%s ends on %v, want %s", p.Label, p.EndsOn, want.Format(time.DateOnly))
		}
		if days < 28 || days > 31 {
			tb.Errorf("%s: %d days, want 28 to 31", p.Label, days)
		}
		if r.MonthDay == 1 {
			if want := start.Format("January 2006"); p.Label != want {
				tb.Errorf("label %q, want %q", p.Label, want)
			}
		}
	}
}

// TestPeriodRules_Containing pins periods at the boundaries where calendar
// code goes wrong, labels and payroll dates included; every row is worked
// out by hand.
func TestPeriodRules_Containing(t *testing.T) {
	weekMon := PeriodRules{Kind: PeriodWeekly, Weekday: time.Monday, PayrollDays: 3}
	weekMonEarly := PeriodRules{Kind: PeriodWeekly, Weekday: time.Monday, PayrollDays: -10}
	weekSun := PeriodRules{Kind: PeriodWeekly, Weekday: time.Sunday}
	fortnight := PeriodRules{Kind: PeriodFortnightly, Weekday: time.Monday, Anchor: periodDay(2026, time.January, 5), PayrollDays: 5}
	month := PeriodRules{Kind: PeriodMonthly, MonthDay: 1, PayrollDays: 5}
	monthLate := PeriodRules{Kind: PeriodMonthly, MonthDay: 1, PayrollDays: 62}
	monthEarly := PeriodRules{Kind: PeriodMonthly, MonthDay: 1, PayrollDays: -28}
	month16 := PeriodRules{Kind: PeriodMonthly, MonthDay: 16, PayrollDays: -3}

	d := periodDay
	for _, tc := range []struct {
		name  string
		rules PeriodRules
		day   Date
		want  PeriodSpan // Kind is filled from rules
	}{
		{"weekly same month", weekMon, d(2026, 11, 18), PeriodSpan{StartsOn: d(2026, 11, 16), EndsOn: d(2026, 11, 22), PayrollOn: d(2026, 11, 25), Label: "16–22 Nov 2026"}},
		{"weekly on its first day", weekMon, d(2026, 11, 16), PeriodSpan{StartsOn: d(2026, 11, 16), EndsOn: d(2026, 11, 22), PayrollOn: d(2026, 11, 25), Label: "16–22 Nov 2026"}},
		{"weekly on its last day", weekMon, d(2026, 11, 22), PeriodSpan{StartsOn: d(2026, 11, 16), EndsOn: d(2026, 11, 22), PayrollOn: d(2026, 11, 25), Label: "16–22 Nov 2026"}},
		{"weekly cross month", weekMon, d(2026, 12, 1), PeriodSpan{StartsOn: d(2026, 11, 30), EndsOn: d(2026, 12, 6), PayrollOn: d(2026, 12, 9), Label: "30 Nov – 6 Dec 2026"}},
		{"weekly cross year", weekMon, d(2026, 12, 30), PeriodSpan{StartsOn: d(2026, 12, 28), EndsOn: d(2027, 1, 3), PayrollOn: d(2027, 1, 6), Label: "28 Dec 2026 – 3 Jan 2027"}},
		{"weekly Jan 31", weekMon, d(2024, 1, 31), PeriodSpan{StartsOn: d(2024, 1, 29), EndsOn: d(2024, 2, 4), PayrollOn: d(2024, 2, 7), Label: "29 Jan – 4 Feb 2024"}},
		{"weekly Apr 30", weekMon, d(2024, 4, 30), PeriodSpan{StartsOn: d(2024, 4, 29), EndsOn: d(2024, 5, 5), PayrollOn: d(2024, 5, 8), Label: "29 Apr – 5 May 2024"}},
		{"weekly Feb 29 2024", weekMon, d(2024, 2, 29), PeriodSpan{StartsOn: d(2024, 2, 26), EndsOn: d(2024, 3, 3), PayrollOn: d(2024, 3, 6), Label: "26 Feb – 3 Mar 2024"}},
		{"weekly Sunday Feb 28 2024", weekSun, d(2024, 2, 28), PeriodSpan{StartsOn: d(2024, 2, 25), EndsOn: d(2024, 3, 2), PayrollOn: d(2024, 3, 2), Label: "25 Feb – 2 Mar 2024"}},
		{"weekly Sunday Feb 28 2025", weekSun, d(2025, 2, 28), PeriodSpan{StartsOn: d(2025, 2, 23), EndsOn: d(2025, 3, 1), PayrollOn: d(2025, 3, 1), Label: "23 Feb – 1 Mar 2025"}},
		{"weekly Dec 31", weekMon, d(2025, 12, 31), PeriodSpan{StartsOn: d(2025, 12, 29), EndsOn: d(2026, 1, 4), PayrollOn: d(2026, 1, 7), Label: "29 Dec 2025 – 4 Jan 2026"}},
		{"weekly Jan 1", weekMon, d(2026, 1, 1), PeriodSpan{StartsOn: d(2025, 12, 29), EndsOn: d(2026, 1, 4), PayrollOn: d(2026, 1, 7), Label: "29 Dec 2025 – 4 Jan 2026"}},
		{"weekly payroll back over the year end", weekMonEarly, d(2026, 1, 1), PeriodSpan{StartsOn: d(2025, 12, 29), EndsOn: d(2026, 1, 4), PayrollOn: d(2025, 12, 25), Label: "29 Dec 2025 – 4 Jan 2026"}},
		{"fortnightly on the anchor", fortnight, d(2026, 1, 5), PeriodSpan{StartsOn: d(2026, 1, 5), EndsOn: d(2026, 1, 18), PayrollOn: d(2026, 1, 23), Label: "5–18 Jan 2026"}},
		{"fortnightly the day before the anchor", fortnight, d(2026, 1, 4), PeriodSpan{StartsOn: d(2025, 12, 22), EndsOn: d(2026, 1, 4), PayrollOn: d(2026, 1, 9), Label: "22 Dec 2025 – 4 Jan 2026"}},
		{"fortnightly Feb 29 2024", fortnight, d(2024, 2, 29), PeriodSpan{StartsOn: d(2024, 2, 19), EndsOn: d(2024, 3, 3), PayrollOn: d(2024, 3, 8), Label: "19 Feb – 3 Mar 2024"}},
		{"fortnightly payroll over the year end", fortnight, d(2026, 12, 25), PeriodSpan{StartsOn: d(2026, 12, 21), EndsOn: d(2027, 1, 3), PayrollOn: d(2027, 1, 8), Label: "21 Dec 2026 – 3 Jan 2027"}},
		{"monthly Jan 31", month, d(2024, 1, 31), PeriodSpan{StartsOn: d(2024, 1, 1), EndsOn: d(2024, 1, 31), PayrollOn: d(2024, 2, 5), Label: "January 2024"}},
		{"monthly Apr 30", month, d(2024, 4, 30), PeriodSpan{StartsOn: d(2024, 4, 1), EndsOn: d(2024, 4, 30), PayrollOn: d(2024, 5, 5), Label: "April 2024"}},
		{"monthly Feb 28 2024", month, d(2024, 2, 28), PeriodSpan{StartsOn: d(2024, 2, 1), EndsOn: d(2024, 2, 29), PayrollOn: d(2024, 3, 5), Label: "February 2024"}},
		{"monthly Feb 29 2024", month, d(2024, 2, 29), PeriodSpan{StartsOn: d(2024, 2, 1), EndsOn: d(2024, 2, 29), PayrollOn: d(2024, 3, 5), Label: "February 2024"}},
		{"monthly Feb 28 2025", month, d(2025, 2, 28), PeriodSpan{StartsOn: d(2025, 2, 1), EndsOn: d(2025, 2, 28), PayrollOn: d(2025, 3, 5), Label: "February 2025"}},
		{"monthly Dec 31", month, d(2024, 12, 31), PeriodSpan{StartsOn: d(2024, 12, 1), EndsOn: d(2024, 12, 31), PayrollOn: d(2025, 1, 5), Label: "December 2024"}},
		{"monthly Jan 1", month, d(2025, 1, 1), PeriodSpan{StartsOn: d(2025, 1, 1), EndsOn: d(2025, 1, 31), PayrollOn: d(2025, 2, 5), Label: "January 2025"}},
		{"monthly payroll 62 days on", monthLate, d(2026, 11, 30), PeriodSpan{StartsOn: d(2026, 11, 1), EndsOn: d(2026, 11, 30), PayrollOn: d(2027, 1, 31), Label: "November 2026"}},
		{"monthly payroll 28 days early", monthEarly, d(2024, 3, 15), PeriodSpan{StartsOn: d(2024, 3, 1), EndsOn: d(2024, 3, 31), PayrollOn: d(2024, 3, 3), Label: "March 2024"}},
		{"monthly payroll back over the month end", monthEarly, d(2025, 2, 10), PeriodSpan{StartsOn: d(2025, 2, 1), EndsOn: d(2025, 2, 28), PayrollOn: d(2025, 1, 31), Label: "February 2025"}},
		{"monthly 16th, the day before", month16, d(2024, 2, 15), PeriodSpan{StartsOn: d(2024, 1, 16), EndsOn: d(2024, 2, 15), PayrollOn: d(2024, 2, 12), Label: "16 Jan – 15 Feb 2024"}},
		{"monthly 16th, the day", month16, d(2024, 2, 16), PeriodSpan{StartsOn: d(2024, 2, 16), EndsOn: d(2024, 3, 15), PayrollOn: d(2024, 3, 12), Label: "16 Feb – 15 Mar 2024"}},
		{"monthly 16th, Feb 29 2024", month16, d(2024, 2, 29), PeriodSpan{StartsOn: d(2024, 2, 16), EndsOn: d(2024, 3, 15), PayrollOn: d(2024, 3, 12), Label: "16 Feb – 15 Mar 2024"}},
		{"monthly 16th, Feb 28 2025", month16, d(2025, 2, 28), PeriodSpan{StartsOn: d(2025, 2, 16), EndsOn: d(2025, 3, 15), PayrollOn: d(2025, 3, 12), Label: "16 Feb – 15 Mar 2025"}},
		{"monthly 16th, Jan 31", month16, d(2024, 1, 31), PeriodSpan{StartsOn: d(2024, 1, 16), EndsOn: d(2024, 2, 15), PayrollOn: d(2024, 2, 12), Label: "16 Jan – 15 Feb 2024"}},
		{"monthly 16th, Apr 30", month16, d(2024, 4, 30), PeriodSpan{StartsOn: d(2024, 4, 16), EndsOn: d(2024, 5, 15), PayrollOn: d(2024, 5, 12), Label: "16 Apr – 15 May 2024"}},
		{"monthly 16th, Dec 31", month16, d(2024, 12, 31), PeriodSpan{StartsOn: d(2024, 12, 16), EndsOn: d(2025, 1, 15), PayrollOn: d(2025, 1, 12), Label: "16 Dec 2024 – 15 Jan 2025"}},
		{"monthly 16th, Jan 1", month16, d(2025, 1, 1), PeriodSpan{StartsOn: d(2024, 12, 16), EndsOn: d(2025, 1, 15), PayrollOn: d(2025, 1, 12), Label: "16 Dec 2024 – 15 Jan 2025"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			want.Kind = tc.rules.Kind
			got := tc.rules.Containing(tc.day)
			if got != want {
				t.Errorf("Containing(%v)\n got %+v\nwant %+v", tc.day, got, want)
			}
			if !got.Contains(tc.day) {
				t.Errorf("Containing(%v) = %s, which does not contain it", tc.day, got.Label)
			}
		})
	}
}

// TestPeriodRules_After_Bridge follows periods from the end of one made
// under other rules: a bridge fills the days to the new rules' next natural
// start, and after it the periods are natural.
func TestPeriodRules_After_Bridge(t *testing.T) {
	weekMon := PeriodRules{Kind: PeriodWeekly, Weekday: time.Monday, PayrollDays: 3}
	weekTue := PeriodRules{Kind: PeriodWeekly, Weekday: time.Tuesday, PayrollDays: 3}
	month := PeriodRules{Kind: PeriodMonthly, MonthDay: 1, PayrollDays: 5}
	month16 := PeriodRules{Kind: PeriodMonthly, MonthDay: 16, PayrollDays: 5}
	fortnight := PeriodRules{Kind: PeriodFortnightly, Weekday: time.Monday, Anchor: periodDay(2026, time.January, 5), PayrollDays: 5}

	d := periodDay
	for _, tc := range []struct {
		name    string
		rules   PeriodRules // the new rules
		prevEnd Date        // the last day of the last period under the old rules
		want    []PeriodSpan
	}{
		{"weekly from Monday to calendar months", month, d(2026, 11, 15), []PeriodSpan{
			{StartsOn: d(2026, 11, 16), EndsOn: d(2026, 11, 30), PayrollOn: d(2026, 12, 5), Label: "16–30 Nov 2026"},
			{StartsOn: d(2026, 12, 1), EndsOn: d(2026, 12, 31), PayrollOn: d(2027, 1, 5), Label: "December 2026"},
			{StartsOn: d(2027, 1, 1), EndsOn: d(2027, 1, 31), PayrollOn: d(2027, 2, 5), Label: "January 2027"},
		}},
		{"calendar months to fortnightly", fortnight, d(2026, 11, 30), []PeriodSpan{
			{StartsOn: d(2026, 12, 1), EndsOn: d(2026, 12, 6), PayrollOn: d(2026, 12, 11), Label: "1–6 Dec 2026"},
			{StartsOn: d(2026, 12, 7), EndsOn: d(2026, 12, 20), PayrollOn: d(2026, 12, 25), Label: "7–20 Dec 2026"},
			{StartsOn: d(2026, 12, 21), EndsOn: d(2027, 1, 3), PayrollOn: d(2027, 1, 8), Label: "21 Dec 2026 – 3 Jan 2027"},
		}},
		{"months from the 16th to calendar months: the bridge is not named as a month", month, d(2026, 12, 15), []PeriodSpan{
			{StartsOn: d(2026, 12, 16), EndsOn: d(2026, 12, 31), PayrollOn: d(2027, 1, 5), Label: "16–31 Dec 2026"},
			{StartsOn: d(2027, 1, 1), EndsOn: d(2027, 1, 31), PayrollOn: d(2027, 2, 5), Label: "January 2027"},
		}},
		{"calendar months to months from the 16th", month16, d(2026, 11, 30), []PeriodSpan{
			{StartsOn: d(2026, 12, 1), EndsOn: d(2026, 12, 15), PayrollOn: d(2026, 12, 20), Label: "1–15 Dec 2026"},
			{StartsOn: d(2026, 12, 16), EndsOn: d(2027, 1, 15), PayrollOn: d(2027, 1, 20), Label: "16 Dec 2026 – 15 Jan 2027"},
		}},
		{"weekly from Monday to from Tuesday: a one-day bridge", weekTue, d(2026, 11, 15), []PeriodSpan{
			{StartsOn: d(2026, 11, 16), EndsOn: d(2026, 11, 16), PayrollOn: d(2026, 11, 19), Label: "16 Nov 2026"},
			{StartsOn: d(2026, 11, 17), EndsOn: d(2026, 11, 23), PayrollOn: d(2026, 11, 26), Label: "17–23 Nov 2026"},
		}},
		{"same rules: no bridge", weekMon, d(2026, 11, 15), []PeriodSpan{
			{StartsOn: d(2026, 11, 16), EndsOn: d(2026, 11, 22), PayrollOn: d(2026, 11, 25), Label: "16–22 Nov 2026"},
			{StartsOn: d(2026, 11, 23), EndsOn: d(2026, 11, 29), PayrollOn: d(2026, 12, 2), Label: "23–29 Nov 2026"},
		}},
		{"fortnightly to weekly on the same weekday: no bridge", weekMon, d(2026, 1, 18), []PeriodSpan{
			{StartsOn: d(2026, 1, 19), EndsOn: d(2026, 1, 25), PayrollOn: d(2026, 1, 28), Label: "19–25 Jan 2026"},
		}},
		{"weekly to calendar months at a month end: no bridge", month, d(2026, 5, 31), []PeriodSpan{
			{StartsOn: d(2026, 6, 1), EndsOn: d(2026, 6, 30), PayrollOn: d(2026, 7, 5), Label: "June 2026"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prevEnd := tc.prevEnd
			for i, want := range tc.want {
				want.Kind = tc.rules.Kind
				got := tc.rules.After(prevEnd)
				if got != want {
					t.Errorf("period %d: After(%v)\n got %+v\nwant %+v", i, prevEnd, got, want)
				}
				prevEnd = got.EndsOn
			}
			// Once past the bridge, the periods are the rules' own.
			last := tc.want[len(tc.want)-1]
			last.Kind = tc.rules.Kind
			if got := tc.rules.Containing(last.StartsOn); got != last {
				t.Errorf("Containing(%v) = %+v, want the last period %+v", last.StartsOn, got, last)
			}
		})
	}
}

func TestPeriodRules_Spans(t *testing.T) {
	r := PeriodRules{Kind: PeriodWeekly, Weekday: time.Monday}
	for _, n := range []int{-1, 0} {
		if got := r.Spans(periodDay(2026, time.November, 18), n); got != nil {
			t.Errorf("Spans(_, %d) = %v, want nil", n, got)
		}
	}
	got := r.Spans(periodDay(2026, time.November, 18), 3)
	var labels []string
	for _, p := range got {
		labels = append(labels, p.Label)
	}
	if want := []string{"16–22 Nov 2026", "23–29 Nov 2026", "30 Nov – 6 Dec 2026"}; !slices.Equal(labels, want) {
		t.Errorf("Spans(2026-11-18, 3) labels %q, want %q", labels, want)
	}
}

func TestPeriodSpan_Contains(t *testing.T) {
	p := PeriodSpan{StartsOn: periodDay(2024, time.February, 26), EndsOn: periodDay(2024, time.March, 3)}
	for _, tc := range []struct {
		d    Date
		want bool
	}{
		{periodDay(2024, time.February, 25), false},
		{periodDay(2024, time.February, 26), true},
		{periodDay(2024, time.February, 29), true},
		{periodDay(2024, time.March, 1), true},
		{periodDay(2024, time.March, 3), true},
		{periodDay(2024, time.March, 4), false},
		{periodDay(2023, time.March, 1), false},
		{periodDay(2025, time.February, 27), false},
	} {
		if got := p.Contains(tc.d); got != tc.want {
			t.Errorf("Contains(%v) = %v, want %v", tc.d, got, tc.want)
		}
	}
}

func TestPeriodKind_Valid(t *testing.T) {
	for _, tc := range []struct {
		k    PeriodKind
		want bool
	}{
		{PeriodWeekly, true}, {PeriodFortnightly, true}, {PeriodMonthly, true},
		{"", false}, {"daily", false}, {"Weekly", false}, {"biweekly", false},
	} {
		if got := tc.k.Valid(); got != tc.want {
			t.Errorf("PeriodKind(%q).Valid() = %v, want %v", tc.k, got, tc.want)
		}
	}
}

func TestPeriodRules_Validate(t *testing.T) {
	monday := periodDay(2026, time.January, 5)
	for _, tc := range []struct {
		name  string
		rules PeriodRules
		want  []string // fields, in order
	}{
		{"weekly", PeriodRules{Kind: PeriodWeekly, Weekday: time.Sunday}, nil},
		{"weekly ignores anchor and month day", PeriodRules{Kind: PeriodWeekly, Weekday: time.Saturday, Anchor: periodDay(2026, 2, 30), MonthDay: 99}, nil},
		{"fortnightly", PeriodRules{Kind: PeriodFortnightly, Weekday: time.Monday, Anchor: monday}, nil},
		{"monthly from the 1st", PeriodRules{Kind: PeriodMonthly, MonthDay: 1}, nil},
		{"monthly from the 28th", PeriodRules{Kind: PeriodMonthly, MonthDay: 28}, nil},
		{"monthly ignores weekday and anchor", PeriodRules{Kind: PeriodMonthly, MonthDay: 16, Weekday: 9, Anchor: periodDay(2026, 1, 6)}, nil},
		{"payroll days at the lower bound", PeriodRules{Kind: PeriodWeekly, PayrollDays: -28}, nil},
		{"payroll days at the upper bound", PeriodRules{Kind: PeriodWeekly, PayrollDays: 62}, nil},

		{"no kind", PeriodRules{}, []string{"kind"}},
		{"unknown kind", PeriodRules{Kind: "daily"}, []string{"kind"}},
		{"weekday too high", PeriodRules{Kind: PeriodWeekly, Weekday: 7}, []string{"weekday"}},
		{"weekday negative", PeriodRules{Kind: PeriodWeekly, Weekday: -1}, []string{"weekday"}},
		{"fortnightly without anchor", PeriodRules{Kind: PeriodFortnightly, Weekday: time.Monday}, []string{"anchor"}},
		{"fortnightly anchor on another weekday", PeriodRules{Kind: PeriodFortnightly, Weekday: time.Monday, Anchor: periodDay(2026, 1, 6)}, []string{"anchor"}},
		{"fortnightly anchor not a day", PeriodRules{Kind: PeriodFortnightly, Weekday: time.Monday, Anchor: periodDay(2026, 2, 30)}, []string{"anchor"}},
		{"fortnightly bad weekday: anchor not judged against it", PeriodRules{Kind: PeriodFortnightly, Weekday: 8, Anchor: monday}, []string{"weekday"}},
		{"month day 0", PeriodRules{Kind: PeriodMonthly}, []string{"month_day"}},
		{"month day 29", PeriodRules{Kind: PeriodMonthly, MonthDay: 29}, []string{"month_day"}},
		{"month day 31", PeriodRules{Kind: PeriodMonthly, MonthDay: 31}, []string{"month_day"}},
		{"month day negative", PeriodRules{Kind: PeriodMonthly, MonthDay: -1}, []string{"month_day"}},
		{"payroll days too early", PeriodRules{Kind: PeriodMonthly, MonthDay: 1, PayrollDays: -29}, []string{"payroll_days"}},
		{"payroll days too late", PeriodRules{Kind: PeriodWeekly, PayrollDays: 63}, []string{"payroll_days"}},
		{"every problem at once", PeriodRules{Kind: PeriodFortnightly, Weekday: 9, PayrollDays: 100}, []string{"weekday", "anchor", "payroll_days"}},
		{"unknown kind and payroll days", PeriodRules{Kind: "yearly", PayrollDays: -100}, []string{"kind", "payroll_days"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.rules.Validate()
			if tc.want == nil && errs != nil {
				t.Fatalf("Validate() = %v, want nil", errs)
			}
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
				if e.Message == "" {
					t.Errorf("%s: empty message", e.Field)
				}
			}
			if !slices.Equal(fields, tc.want) {
				t.Errorf("Validate() fields %q, want %q (%v)", fields, tc.want, errs)
			}
		})
	}
}

// TestPeriodRules_InvalidPanics checks that invalid rules stop the period
// methods rather than yielding periods that overlap or leave gaps.
func TestPeriodRules_InvalidPanics(t *testing.T) {
	bad := PeriodRules{Kind: PeriodMonthly, MonthDay: 31}
	day := periodDay(2026, time.January, 31)
	for name, call := range map[string]func(){
		"Containing": func() { bad.Containing(day) },
		"After":      func() { bad.After(day) },
		"Spans":      func() { bad.Spans(day, 2) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with month day 31 did not panic", name)
				}
			}()
			call()
		})
	}
}
