package cloud

import (
	"cmp"
	"fmt"
	"sort"
	"time"
)

// Date is a calendar day with no time zone (YYYY-MM-DD). Timesheet periods
// are made of days, not instants: a period is the same days at every site,
// and only its first and last instant depend on the site's zone (Start,
// PeriodSpan.ClosesAt). The zero Date is no day (IsZero). A Date built by
// hand must be a day that exists; ParseDate and DateOf make only those.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// DateOf returns the day of t in t's own location; convert t with In first
// to ask about another zone.
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{Year: y, Month: m, Day: d}
}

// ParseDate parses a strict YYYY-MM-DD: four-digit year, two-digit month and
// day, nothing before or after, and a day that exists (2025-02-29 does not).
func ParseDate(s string) (Date, error) {
	// time.Parse with DateOnly is already this strict: fixed-width numbers,
	// no surrounding text, and days checked against the month.
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return Date{}, fmt.Errorf("parse date %q: want YYYY-MM-DD, a day that exists", s)
	}
	return DateOf(t), nil
}

// String returns d as YYYY-MM-DD.
func (d Date) String() string {
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
}

// AddDays returns the day n days after d (before, when n is negative).
func (d Date) AddDays(n int) Date {
	return DateOf(time.Date(d.Year, d.Month, d.Day+n, 0, 0, 0, 0, time.UTC))
}

// Weekday returns the day of the week of d.
func (d Date) Weekday() time.Weekday { return d.Time().Weekday() }

// Compare returns -1 when d is before o, +1 when after, 0 when the same day.
func (d Date) Compare(o Date) int {
	if c := cmp.Compare(d.Year, o.Year); c != 0 {
		return c
	}
	if c := cmp.Compare(d.Month, o.Month); c != 0 {
		return c
	}
	return cmp.Compare(d.Day, o.Day)
}

// Before reports whether d is before o.
func (d Date) Before(o Date) bool { return d.Compare(o) < 0 }

// After reports whether d is after o.
func (d Date) After(o Date) bool { return d.Compare(o) > 0 }

// IsZero reports whether d is the zero Date, which is no day.
func (d Date) IsZero() bool { return d == Date{} }

// Start returns the first instant of d at loc: the first time the clocks
// there show d. That is midnight, except where a daylight-saving change
// skips midnight (America/Santiago's spring change goes from 23:59:59 to
// 01:00): the day then starts at the change, 01:00 local. time.Date alone
// would answer 23:00 the day before there, an instant of the wrong day.
// Where clocks go back over midnight, the day starts at the first midnight.
func (d Date) Start(loc *time.Location) time.Time {
	t := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, loc)
	if DateOf(t) == d && DateOf(t.Add(-time.Second)).Before(d) {
		return t
	}
	// Midnight is skipped or repeated and time.Date picked an instant that
	// is not the first of d. No zone is more than 16 hours off UTC, and
	// offsets change on whole seconds, so the start is the first whole
	// second within 30 hours of UTC midnight at which the clocks show d or
	// a later day.
	from := d.Time().Add(-30 * time.Hour).Unix()
	n := int((60 * time.Hour) / time.Second)
	i := sort.Search(n, func(i int) bool {
		return !DateOf(time.Unix(from+int64(i), 0).In(loc)).Before(d)
	})
	return time.Unix(from+int64(i), 0).In(loc)
}

// Time returns midnight UTC of d: the same instant for the same day
// whatever the zone, for storing and sorting days as times.
func (d Date) Time() time.Time {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC)
}

// DaysBetween returns b minus a in days: 1 when b is the day after a,
// negative when b is before a.
func DaysBetween(a, b Date) int {
	// Days in UTC are all 86,400 seconds long, so this is exact.
	return int((b.Time().Unix() - a.Time().Unix()) / (24 * 60 * 60))
}

// PeriodKind is how an organisation cuts time into timesheet periods.
type PeriodKind string

// The period kinds.
const (
	PeriodWeekly      PeriodKind = "weekly"      // seven days from a weekday
	PeriodFortnightly PeriodKind = "fortnightly" // fourteen days from a weekday, in step with an anchor day
	PeriodMonthly     PeriodKind = "monthly"     // from a day of one month to the day before it in the next
)

// Valid reports whether k is weekly, fortnightly or monthly.
func (k PeriodKind) Valid() bool {
	return k == PeriodWeekly || k == PeriodFortnightly || k == PeriodMonthly
}

// PeriodRules are an organisation's timesheet-period rules. Every day
// belongs to exactly one period of the rules.
//
// Containing, After and Spans panic when Validate reports a problem: rules
// are validated where they are set, so invalid rules reaching them are a
// bug, and a panic is better than periods that silently overlap or leave
// gaps.
type PeriodRules struct {
	Kind        PeriodKind
	Weekday     time.Weekday // weekly and fortnightly: the weekday every period starts on
	Anchor      Date         // fortnightly: a day some period starts on (must be a Weekday); ignored otherwise
	MonthDay    int          // monthly: day of the month each period starts on, 1..28 (1 = calendar months); ignored otherwise
	PayrollDays int          // payroll_on = ends_on + PayrollDays; -28..62
}

// The bounds Validate holds the numeric rules to. MonthDay stops at 28 so
// that every month, February included, has the day periods start on.
const (
	periodMaxMonthDay    = 28
	periodMinPayrollDays = -28
	periodMaxPayrollDays = 62
)

// PeriodRuleError is one problem Validate found. Field is the rule's JSON
// name: kind, weekday, anchor, month_day or payroll_days.
type PeriodRuleError struct {
	Field   string
	Message string
}

func (e PeriodRuleError) Error() string { return e.Field + ": " + e.Message }

// Validate returns every problem with r, nil when there is none. It judges
// only the fields r.Kind uses, and none of them when the kind is unknown.
func (r PeriodRules) Validate() []PeriodRuleError {
	var errs []PeriodRuleError
	add := func(field, format string, args ...any) {
		errs = append(errs, PeriodRuleError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	if !r.Kind.Valid() {
		add("kind", "must be %s, %s or %s", PeriodWeekly, PeriodFortnightly, PeriodMonthly)
	}
	weekdayOK := r.Weekday >= time.Sunday && r.Weekday <= time.Saturday
	if (r.Kind == PeriodWeekly || r.Kind == PeriodFortnightly) && !weekdayOK {
		add("weekday", "must be a day of the week, 0 (Sunday) to 6 (Saturday)")
	}
	if r.Kind == PeriodFortnightly {
		switch {
		case r.Anchor.IsZero():
			add("anchor", "is required for fortnightly periods")
		case DateOf(r.Anchor.Time()) != r.Anchor:
			add("anchor", "%s is not a calendar day", r.Anchor)
		case weekdayOK && r.Anchor.Weekday() != r.Weekday:
			add("anchor", "%s is a %s; it must be a %s, the weekday periods start on",
				r.Anchor, r.Anchor.Weekday(), r.Weekday)
		}
	}
	if r.Kind == PeriodMonthly && (r.MonthDay < 1 || r.MonthDay > periodMaxMonthDay) {
		add("month_day", "must be 1 to %d, a day every month has", periodMaxMonthDay)
	}
	if r.PayrollDays < periodMinPayrollDays || r.PayrollDays > periodMaxPayrollDays {
		add("payroll_days", "must be %d to %d", periodMinPayrollDays, periodMaxPayrollDays)
	}
	return errs
}

// PeriodSpan is one period's days.
//
// Label names the period in English, the same way every time:
//
//	"November 2026"                 a calendar month (monthly, MonthDay 1)
//	"16–22 Nov 2026"                within one month
//	"30 Nov – 6 Dec 2026"           across a month end
//	"28 Dec 2026 – 3 Jan 2027"      across a year end
//	"16 Nov 2026"                   a single day (only ever a bridge)
//
// Only monthly periods with MonthDay 1 take the month form; every other
// period, bridges included, takes one of the range forms (en dashes).
type PeriodSpan struct {
	Kind      PeriodKind
	StartsOn  Date
	EndsOn    Date // inclusive
	PayrollOn Date
	Label     string
}

// Containing returns the period of r that contains d. It panics when r is
// not valid.
func (r PeriodRules) Containing(d Date) PeriodSpan {
	r.mustBeValid()
	var start, end Date
	switch r.Kind {
	case PeriodWeekly:
		start = d.AddDays(-periodMod(int(d.Weekday()-r.Weekday), 7))
		end = start.AddDays(6)
	case PeriodFortnightly:
		// Anchor ± 14k for any k: days before the anchor keep its parity.
		start = d.AddDays(-periodMod(DaysBetween(r.Anchor, d), 14))
		end = start.AddDays(13)
	case PeriodMonthly:
		start = Date{Year: d.Year, Month: d.Month, Day: r.MonthDay}
		if d.Day < r.MonthDay {
			start = DateOf(time.Date(d.Year, d.Month-1, r.MonthDay, 0, 0, 0, 0, time.UTC))
		}
		// Day MonthDay-1 of the next month; day 0 is the previous month's last.
		end = DateOf(time.Date(start.Year, start.Month+1, r.MonthDay-1, 0, 0, 0, 0, time.UTC))
	}
	return r.span(start, end, true)
}

// After returns the period that starts the day after prevEnd, the end of
// the period before it, so that periods follow on from each other with no
// gap or overlap even when an organisation changes its rules. It is the
// natural period of r when one starts that day. Otherwise it is a bridge:
// from that day to the end of r's natural period containing it, with r's
// kind and payroll delay and a range label; the period after a bridge is
// natural again. It panics when r is not valid.
func (r PeriodRules) After(prevEnd Date) PeriodSpan {
	first := prevEnd.AddDays(1)
	p := r.Containing(first)
	if p.StartsOn == first {
		return p
	}
	return r.span(first, p.EndsOn, false)
}

// Spans returns n consecutive periods of r, the first containing from; nil
// when n is not positive. It panics when r is not valid.
func (r PeriodRules) Spans(from Date, n int) []PeriodSpan {
	if n <= 0 {
		return nil
	}
	spans := make([]PeriodSpan, 0, n)
	p := r.Containing(from)
	for range n {
		spans = append(spans, p)
		p = r.After(p.EndsOn)
	}
	return spans
}

// Contains reports whether d is one of p's days.
func (p PeriodSpan) Contains(d Date) bool {
	return !d.Before(p.StartsOn) && !d.After(p.EndsOn)
}

// ClosesAt returns the first instant after p at loc, the start of the day
// after EndsOn: a period is open while now is before it. It is not always
// midnight (see Date.Start), and a period is an hour shorter or longer than
// its days times 24 hours when the clocks change during it.
func (p PeriodSpan) ClosesAt(loc *time.Location) time.Time {
	return p.EndsOn.AddDays(1).Start(loc)
}

// span builds r's period from start to end; natural is false for a bridge,
// which a calendar-month label would misname.
func (r PeriodRules) span(start, end Date, natural bool) PeriodSpan {
	label := periodRangeLabel(start, end)
	if natural && r.Kind == PeriodMonthly && r.MonthDay == 1 {
		label = fmt.Sprintf("%s %d", start.Month, start.Year)
	}
	return PeriodSpan{
		Kind:      r.Kind,
		StartsOn:  start,
		EndsOn:    end,
		PayrollOn: end.AddDays(r.PayrollDays),
		Label:     label,
	}
}

func (r PeriodRules) mustBeValid() {
	if errs := r.Validate(); errs != nil {
		panic(fmt.Sprintf("cloud: invalid period rules: %v", errs))
	}
}

// periodRangeLabel names the days from a to b, leaving out the month and
// year where both ends share them.
func periodRangeLabel(a, b Date) string {
	am, bm := a.Month.String()[:3], b.Month.String()[:3]
	switch {
	case a == b:
		return fmt.Sprintf("%d %s %d", a.Day, am, a.Year)
	case a.Year != b.Year:
		return fmt.Sprintf("%d %s %d – %d %s %d", a.Day, am, a.Year, b.Day, bm, b.Year)
	case a.Month != b.Month:
		return fmt.Sprintf("%d %s – %d %s %d", a.Day, am, b.Day, bm, b.Year)
	default:
		return fmt.Sprintf("%d–%d %s %d", a.Day, b.Day, bm, b.Year)
	}
}

// periodMod returns a modulo m in 0..m-1, also for negative a.
func periodMod(a, m int) int { return (a%m + m) % m }
