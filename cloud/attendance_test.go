package cloud

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func punchOf(id string, kind PunchKind, at time.Time) AttendanceEvent {
	return AttendanceEvent{ID: id, Kind: kind, OccurredAt: at, Day: DateOf(at), SiteID: "site_a"}
}

// Stays pair an in with the next out within MaxStay; everything else is
// unpaired and counts no minutes; a stay counts on its in's day.
func TestSummarise_Pairing(t *testing.T) {
	d := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	h := func(x float64) time.Time { return d.Add(time.Duration(x * float64(time.Hour))) }
	cases := []struct {
		name    string
		punches []AttendanceEvent
		want    map[Date][3]int // minutes, punches, unpaired
	}{
		{"one stay", []AttendanceEvent{punchOf("a", PunchIn, h(8)), punchOf("b", PunchOut, h(16.5))},
			map[Date][3]int{DateOf(d): {510, 2, 0}}},
		{"double in is one stay from the first", []AttendanceEvent{punchOf("a", PunchIn, h(8)), punchOf("b", PunchIn, h(9)), punchOf("c", PunchOut, h(10))},
			map[Date][3]int{DateOf(d): {120, 3, 0}}},
		{"out without in", []AttendanceEvent{punchOf("a", PunchOut, h(8))},
			map[Date][3]int{DateOf(d): {0, 1, 1}}},
		{"in without out", []AttendanceEvent{punchOf("a", PunchIn, h(8))},
			map[Date][3]int{DateOf(d): {0, 1, 1}}},
		{"night shift counts on its first day", []AttendanceEvent{punchOf("a", PunchIn, h(22)), punchOf("b", PunchOut, h(30))},
			map[Date][3]int{DateOf(d): {480, 1, 0}, DateOf(d).AddDays(1): {0, 1, 0}}},
		{"an out more than 16 h later pairs with nothing", []AttendanceEvent{punchOf("a", PunchIn, h(8)), punchOf("b", PunchOut, h(24.5))},
			map[Date][3]int{DateOf(d): {0, 1, 1}, DateOf(d).AddDays(1): {0, 1, 1}}},
		{"exactly 16 h pairs", []AttendanceEvent{punchOf("a", PunchIn, h(8)), punchOf("b", PunchOut, h(24))},
			map[Date][3]int{DateOf(d): {960, 1, 0}, DateOf(d).AddDays(1): {0, 1, 0}}},
		{"order given does not matter", []AttendanceEvent{punchOf("b", PunchOut, h(12)), punchOf("a", PunchIn, h(8)), punchOf("d", PunchOut, h(17)), punchOf("c", PunchIn, h(13))},
			map[Date][3]int{DateOf(d): {480, 4, 0}}},
		{"seconds are cut per stay", []AttendanceEvent{punchOf("a", PunchIn, h(8)), punchOf("b", PunchOut, h(8).Add(59*time.Second)),
			punchOf("c", PunchIn, h(9)), punchOf("d", PunchOut, h(9).Add(59*time.Second))},
			map[Date][3]int{DateOf(d): {0, 4, 0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := map[Date][3]int{}
			for _, s := range Summarise("person_x", tc.punches, DateOf(d).AddDays(-1), DateOf(d).AddDays(2)) {
				got[s.Day] = [3]int{s.Minutes, s.Punches, s.Unpaired}
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// A summary's range cuts what it reports, not what pairs: a stay begun
// before the range is not counted, its out pairs all the same.
func TestSummarise_RangeAndFirstLast(t *testing.T) {
	d := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	ps := []AttendanceEvent{
		punchOf("a", PunchIn, d.Add(-2*time.Hour)), punchOf("b", PunchOut, d.Add(6*time.Hour)),
		punchOf("c", PunchIn, d.Add(9*time.Hour)), punchOf("d", PunchOut, d.Add(12*time.Hour)),
		punchOf("e", PunchIn, d.Add(13*time.Hour)), punchOf("f", PunchOut, d.Add(18*time.Hour)),
	}
	days := Summarise("person_x", ps, DateOf(d), DateOf(d))
	require.Len(t, days, 1)
	s := days[0]
	require.Equal(t, 8*60, s.Minutes, "the night's stay belongs to the day before")
	require.Equal(t, d.Add(9*time.Hour), *s.FirstIn)
	require.Equal(t, d.Add(18*time.Hour), *s.LastOut)
	require.Equal(t, 0, s.Unpaired)
	require.Equal(t, Totals{Minutes: 480, Days: 1, Punches: 5, Unpaired: 0}, Tally(days))
}

// A phone is at the site inside the geofence's radius (not widened by
// accuracy) or on a listed network: by access point when one is named,
// else by name.
func TestAttendanceZone_Admits(t *testing.T) {
	z := &AttendanceZone{Geofence: &Geofence{Latitude: 51.5054, Longitude: -0.0235, RadiusM: 100},
		Wifi: []WifiNetwork{{SSID: "Staff", BSSID: "3c:22:fb:12:34:56"}, {SSID: "Guest"}}}
	north := func(m float64) *GeoPoint { return &GeoPoint{Latitude: 51.5054 + m/111195, Longitude: -0.0235} }
	require.True(t, z.Admits(north(99), nil))
	require.False(t, z.Admits(north(101), nil))
	far := north(500)
	far.AccuracyM = 1000
	require.False(t, z.Admits(far, nil), "a vague fix does not widen the circle")
	require.True(t, z.Admits(nil, &WifiNetwork{SSID: "x", BSSID: "3C:22:FB:12:34:56"}))
	require.False(t, z.Admits(nil, &WifiNetwork{SSID: "Staff", BSSID: "00:00:00:00:00:01"}), "the name alone is not enough where an access point is named")
	require.True(t, z.Admits(nil, &WifiNetwork{SSID: "Guest"}))
	require.False(t, z.Admits(nil, &WifiNetwork{SSID: "guest"}), "names are compared exactly")
	require.False(t, (*AttendanceZone)(nil).Admits(north(0), nil))
	require.InDelta(t, 343_500, DistanceM(51.5074, -0.1278, 48.8566, 2.3522), 1500, "London to Paris")
}

// The device's clock is measured from sent_at, or from a punch dated
// after its arrival, and flagged beyond the tolerance.
func TestAttendanceEvent_Skew(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		occurred time.Duration
		sent     *time.Duration
		want     *int
		skewed   bool
	}{
		{-time.Hour, nil, nil, false},
		{-time.Hour, ptr(3 * time.Minute), ptr(180), true},
		{-time.Hour, ptr(-2 * time.Minute), ptr(-120), false},
		{-time.Hour, ptr(-121 * time.Second), ptr(-121), true},
		{30 * time.Second, nil, ptr(30), false},
		{5 * time.Minute, nil, ptr(300), true},
	} {
		t.Run(fmt.Sprint(tc.occurred, tc.sent), func(t *testing.T) {
			e := AttendanceEvent{OccurredAt: now.Add(tc.occurred), ReceivedAt: now}
			if tc.sent != nil {
				s := now.Add(*tc.sent)
				e.SentAt = &s
			}
			e.measureSkew()
			require.Equal(t, tc.want, e.SkewSeconds)
			require.Equal(t, tc.skewed, e.ClockSkewed())
		})
	}
}

func ptr[T any](v T) *T { return &v }

// Stored period rules read back as written.
func TestPeriodRules_EncodeDecode(t *testing.T) {
	for _, r := range []PeriodRules{
		{Kind: PeriodWeekly, Weekday: time.Sunday, PayrollDays: -3},
		{Kind: PeriodFortnightly, Weekday: time.Wednesday, Anchor: Date{2026, 1, 7}, PayrollDays: 10},
		{Kind: PeriodMonthly, MonthDay: 16, PayrollDays: 0},
	} {
		b, err := EncodePeriodRules(r)
		require.NoError(t, err)
		var got PeriodRules
		require.NoError(t, DecodePeriodRules(b, &got))
		require.Equal(t, r, got, "%s", b)
	}
	var r PeriodRules
	require.Error(t, DecodePeriodRules([]byte(`{"kind":"weekly","weekday":"funday"}`), &r))
}
