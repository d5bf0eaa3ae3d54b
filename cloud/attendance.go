package cloud

import (
	"math"
	"slices"
	"strings"
	"time"
)

// This file is attendance's vocabulary: punches, timesheets, periods, the
// organisation's attendance settings, consent and evidence, and the pure
// rules that turn punches into minutes on site (docs/decisions.md,
// "Attendance"). attendances.go applies them.

// Attendance rules fixed by the product (docs/decisions.md, "Attendance").
const (
	// PunchRepeat: a punch of the same person, kind, site, gate and
	// source within this long of another is the same punch.
	PunchRepeat = 60 * time.Second
	// ClockSkewTolerance: a device whose clock is further than this from
	// the cloud's has its punch flagged clock_skewed.
	ClockSkewTolerance = 2 * time.Minute
	// MaxStay: an in with no out within this long is an unpaired in; its
	// stay counts no minutes.
	MaxStay = 16 * time.Hour
	// PeriodsAhead: periods exist at least this far past today.
	PeriodsAhead = 31
	// MaxPunchAge and MaxPunchAhead bound occurred_at of an API punch
	// against the time it is received.
	MaxPunchAge   = 400 * 24 * time.Hour
	MaxPunchAhead = 24 * time.Hour
	// MaxEvidenceImage is the largest face or selfie image, in bytes.
	MaxEvidenceImage = 512 << 10
	// MaxWifiNetworks is how many Wi-Fi networks a site may list.
	MaxWifiNetworks = 20
)

// PunchKind says whether a punch clocks in or out.
type PunchKind string

// The punch kinds.
const (
	PunchIn  PunchKind = "in"
	PunchOut PunchKind = "out"
)

// Valid reports whether k is in or out.
func (k PunchKind) Valid() bool { return k == PunchIn || k == PunchOut }

// PunchSource says where a punch came from.
type PunchSource string

// The punch sources. Gate punches come from edges; the API takes the
// others.
const (
	SourceGate        PunchSource = "gate"
	SourceTerminal    PunchSource = "terminal"
	SourcePhone       PunchSource = "phone"
	SourceIntegration PunchSource = "integration"
)

// Valid reports whether src is one of the four sources.
func (src PunchSource) Valid() bool {
	return src == SourceGate || src == SourceTerminal || src == SourcePhone || src == SourceIntegration
}

// GeoPoint is a position as a device reports it.
type GeoPoint struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
	AccuracyM float64 `json:"accuracy_m"` // 0 when the device did not say
}

// Geofence is a circle around a site.
type Geofence struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
	RadiusM   float64 `json:"radius_m"`
}

// WifiNetwork is a Wi-Fi network by name and, optionally, access point.
type WifiNetwork struct {
	SSID  string `json:"ssid"`
	BSSID string `json:"bssid,omitempty"` // lower-case aa:bb:cc:dd:ee:ff; empty: any access point of the SSID
}

// AttendanceZone is where a phone may punch for a site.
type AttendanceZone struct {
	Geofence *Geofence     `json:"geofence,omitempty"`
	Wifi     []WifiNetwork `json:"wifi_networks,omitempty"`
}

// Empty reports whether the zone allows nothing.
func (z *AttendanceZone) Empty() bool { return z == nil || z.Geofence == nil && len(z.Wifi) == 0 }

// earthRadiusM is the mean radius of the Earth.
const earthRadiusM = 6371008.8

// DistanceM is the great-circle distance between two points, in metres.
func DistanceM(lat1, lng1, lat2, lng2 float64) float64 {
	rad := math.Pi / 180
	dLat, dLng := (lat2-lat1)*rad, (lng2-lng1)*rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLng/2)*math.Sin(dLng/2)
	return 2 * earthRadiusM * math.Asin(math.Min(1, math.Sqrt(a)))
}

// Admits reports whether a phone at loc, or seeing wifi, is at the site:
// inside the geofence (the reported position, not widened by its
// accuracy) or on one of the site's networks (the access point when the
// site names one, else the network name).
func (z *AttendanceZone) Admits(loc *GeoPoint, wifi *WifiNetwork) bool {
	if z == nil {
		return false
	}
	if loc != nil && z.Geofence != nil {
		g := z.Geofence
		if DistanceM(loc.Latitude, loc.Longitude, g.Latitude, g.Longitude) <= g.RadiusM {
			return true
		}
	}
	if wifi != nil {
		for _, n := range z.Wifi {
			if n.BSSID != "" {
				if strings.EqualFold(n.BSSID, wifi.BSSID) {
					return true
				}
				continue
			}
			if n.SSID == wifi.SSID {
				return true
			}
		}
	}
	return false
}

// AttendanceEvent is a punch: a person clocking in or out at a site.
type AttendanceEvent struct {
	ID         string
	Tenant     Tenant
	PersonID   string
	SiteID     string
	GateID     string // the gate of a gate punch, or the one an API punch names; empty when none
	Kind       PunchKind
	Source     PunchSource
	OccurredAt time.Time  // by the device's clock
	ReceivedAt time.Time  // by the cloud's
	SentAt     *time.Time // the device's clock when it sent the punch, when it said
	Day        Date       // the site's local day of OccurredAt
	// SkewSeconds is the device's clock minus the cloud's, in seconds,
	// when it could be measured (the device said when it sent the punch,
	// or the punch claims to be from the future); nil otherwise.
	SkewSeconds *int
	Location    *GeoPoint
	Wifi        *WifiNetwork
	DeviceID    string
	EdgeID      string // gate punches: the edge that recorded it
	FactID      string // gate punches: the edge's fact
	CreatedAt   time.Time
}

// ClockSkewed reports whether the device's clock was off by more than the
// tolerance.
func (e AttendanceEvent) ClockSkewed() bool {
	if e.SkewSeconds == nil {
		return false
	}
	s := *e.SkewSeconds
	return time.Duration(max(s, -s))*time.Second > ClockSkewTolerance
}

// measureSkew sets e.SkewSeconds from what the punch says about the
// device's clock.
func (e *AttendanceEvent) measureSkew() {
	var d time.Duration
	switch {
	case e.SentAt != nil:
		d = e.SentAt.Sub(e.ReceivedAt)
	case e.OccurredAt.After(e.ReceivedAt):
		d = e.OccurredAt.Sub(e.ReceivedAt) // the punch cannot have happened after it arrived
	default:
		return
	}
	s := int(d.Round(time.Second) / time.Second)
	e.SkewSeconds = &s
}

// PunchFilter narrows ListPunches. Empty fields do not filter.
type PunchFilter struct {
	PersonID string
	SiteID   string
	From     *time.Time // occurred at or after
	To       *time.Time // occurred before
}

// TimesheetStatus is a timesheet's stage.
type TimesheetStatus string

// The timesheet stages, in order.
const (
	TimesheetOpen      TimesheetStatus = "open"       // the period has not ended
	TimesheetToConfirm TimesheetStatus = "to_confirm" // the period ended; the person confirms
	TimesheetToApprove TimesheetStatus = "to_approve" // confirmed; a manager approves
	TimesheetApproved  TimesheetStatus = "approved"
)

// Valid reports whether st is a timesheet stage.
func (st TimesheetStatus) Valid() bool {
	return st == TimesheetOpen || st == TimesheetToConfirm || st == TimesheetToApprove || st == TimesheetApproved
}

// Timesheet is one person's time in one period, built from their punches.
type Timesheet struct {
	ID          string
	Tenant      Tenant
	PeriodID    string
	PersonID    string
	Status      TimesheetStatus
	Totals      Totals
	ConfirmedAt *time.Time
	ApprovedAt  *time.Time
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Totals are a timesheet's figures.
type Totals struct {
	Minutes  int // on site, over the period's days
	Days     int // days with at least one stay
	Punches  int // punches on the period's days
	Unpaired int // ins without an out, outs without an in
}

// TimesheetFilter narrows ListTimesheets. Empty fields do not filter.
type TimesheetFilter struct {
	PeriodID string
	PersonID string
	Status   TimesheetStatus
}

// TimesheetCounts counts a period's timesheets by stage.
type TimesheetCounts struct {
	Open, ToConfirm, ToApprove, Approved int
}

// Total is the number of timesheets.
func (c TimesheetCounts) Total() int { return c.Open + c.ToConfirm + c.ToApprove + c.Approved }

// Add counts one timesheet of stage st.
func (c *TimesheetCounts) Add(st TimesheetStatus, n int) {
	switch st {
	case TimesheetOpen:
		c.Open += n
	case TimesheetToConfirm:
		c.ToConfirm += n
	case TimesheetToApprove:
		c.ToApprove += n
	case TimesheetApproved:
		c.Approved += n
	}
}

// PeriodStatus is a timesheet period's stage.
type PeriodStatus string

// The period stages (docs/decisions.md, "Attendance").
const (
	PeriodUpcoming PeriodStatus = "upcoming" // starts after today
	PeriodOpen     PeriodStatus = "open"     // today is one of its days, or it ended and is not closed yet
	PeriodClosed   PeriodStatus = "closed"   // ended: its timesheets are being confirmed and approved
	PeriodApproved PeriodStatus = "approved" // closed, and every timesheet of it approved (at least one)
)

// TimesheetPeriod is a pay period of the organisation.
type TimesheetPeriod struct {
	ID     string
	Tenant Tenant
	PeriodSpan
	ClosesAt   time.Time // the first instant after its last day, at the organisation's zone
	ClosedAt   *time.Time
	ApprovedAt *time.Time
	CreatedAt  time.Time
	Counts     TimesheetCounts // filled on read
}

// Status is the period's stage on day today (at the organisation's zone).
func (p TimesheetPeriod) Status(today Date) PeriodStatus {
	switch {
	case p.ApprovedAt != nil:
		return PeriodApproved
	case p.ClosedAt != nil:
		return PeriodClosed
	case today.Before(p.StartsOn):
		return PeriodUpcoming
	}
	return PeriodOpen
}

// PeriodFilter narrows ListTimesheetPeriods: periods ending on or after
// From and starting on or before To, when set.
type PeriodFilter struct {
	From, To *Date
}

// EvidenceKind is a kind of attendance evidence.
type EvidenceKind string

// The evidence kinds.
const (
	EvidenceFace     EvidenceKind = "face"
	EvidenceSelfie   EvidenceKind = "selfie"
	EvidenceLocation EvidenceKind = "location"
)

// EvidenceKinds lists the kinds in the order the API shows them.
var EvidenceKinds = []EvidenceKind{EvidenceFace, EvidenceSelfie, EvidenceLocation}

// Valid reports whether k is an evidence kind.
func (k EvidenceKind) Valid() bool { return slices.Contains(EvidenceKinds, k) }

// EvidencePolicy is how an organisation records one kind of evidence.
type EvidencePolicy string

// The policies.
const (
	EvidenceOff      EvidencePolicy = "off"      // not recorded
	EvidenceConsent  EvidencePolicy = "consent"  // recorded only for people who consented
	EvidenceRequired EvidencePolicy = "required" // recorded for everyone (a legal or contractual basis)
)

// Valid reports whether p is a policy.
func (p EvidencePolicy) Valid() bool {
	return p == EvidenceOff || p == EvidenceConsent || p == EvidenceRequired
}

// AttendanceSettings are an organisation's attendance rules, per mode.
type AttendanceSettings struct {
	Tenant    Tenant
	Timezone  string // the organisation's zone: when periods close
	Periods   PeriodRules
	Evidence  map[EvidenceKind]EvidencePolicy
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DefaultAttendanceSettings are an organisation's settings until it
// changes them: weekly periods from Monday, payroll five days after a
// period ends, UTC, every kind of evidence only with consent.
func DefaultAttendanceSettings(t Tenant, now time.Time) AttendanceSettings {
	return AttendanceSettings{Tenant: t, Timezone: "UTC",
		Periods:   PeriodRules{Kind: PeriodWeekly, Weekday: time.Monday, PayrollDays: 5},
		Evidence:  map[EvidenceKind]EvidencePolicy{EvidenceFace: EvidenceConsent, EvidenceSelfie: EvidenceConsent, EvidenceLocation: EvidenceConsent},
		CreatedAt: now, UpdatedAt: now}
}

// Location is the settings' zone; UTC when it cannot be loaded.
func (a AttendanceSettings) Location() *time.Location {
	if loc, err := time.LoadLocation(a.Timezone); err == nil {
		return loc
	}
	return time.UTC
}

// Consent is whether a person agreed to one kind of evidence.
type Consent struct {
	Tenant    Tenant
	PersonID  string
	Kind      EvidenceKind
	Given     bool
	UpdatedAt time.Time
}

// Evidence is one piece of attendance evidence.
type Evidence struct {
	ID                string
	Tenant            Tenant
	PersonID          string
	Kind              EvidenceKind
	Basis             EvidencePolicy // consent or required: why it may be kept
	AttendanceEventID string         // the punch it supports; empty when none
	CapturedAt        time.Time
	ContentType       string // face and selfie
	Image             []byte // face and selfie
	Location          *GeoPoint
	CreatedAt         time.Time
}

// DaySummary is one person's day: their stays that began on it.
type DaySummary struct {
	PersonID string
	Day      Date
	SiteIDs  []string   // sites punched at, in first-punch order
	FirstIn  *time.Time // earliest in of the day
	LastOut  *time.Time // latest out ending a stay of the day
	Minutes  int
	Punches  int
	Unpaired int
}

// stay is an in with its out.
type stay struct {
	in, out *AttendanceEvent // out nil: unpaired in; in nil: unpaired out
}

// pairPunches pairs one person's punches, sorted by OccurredAt then ID,
// into stays: an in opens a stay (a second in while one is open is the
// same stay), an out closes the open stay when it is at most MaxStay
// later; an out with no open stay, and an in left open longer than
// MaxStay or at the end, are unpaired.
func pairPunches(ps []AttendanceEvent) []stay {
	var out []stay
	var open *AttendanceEvent
	for i := range ps {
		p := &ps[i]
		if open != nil && p.OccurredAt.Sub(open.OccurredAt) > MaxStay {
			out = append(out, stay{in: open})
			open = nil
		}
		switch p.Kind {
		case PunchIn:
			if open == nil {
				open = p
			}
		case PunchOut:
			if open == nil {
				out = append(out, stay{out: p})
				continue
			}
			out = append(out, stay{in: open, out: p})
			open = nil
		}
	}
	if open != nil {
		out = append(out, stay{in: open})
	}
	return out
}

// sortPunches orders punches as pairPunches needs them.
func sortPunches(ps []AttendanceEvent) {
	slices.SortFunc(ps, func(a, b AttendanceEvent) int {
		if c := a.OccurredAt.Compare(b.OccurredAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// Summarise returns, for one person's punches (any order), a summary of
// each day in [from, to] with a punch or a stay: a stay counts on the
// day its in was punched (the site's local day), even when it ends after
// midnight; an unpaired out counts on its own day. Pass punches from a
// day before from and after to as well, so stays across the range's ends
// pair up.
func Summarise(personID string, ps []AttendanceEvent, from, to Date) []DaySummary {
	ps = slices.Clone(ps)
	sortPunches(ps)
	days := map[Date]*DaySummary{}
	day := func(d Date) *DaySummary {
		if d.Before(from) || d.After(to) {
			return nil
		}
		s := days[d]
		if s == nil {
			s = &DaySummary{PersonID: personID, Day: d, SiteIDs: []string{}}
			days[d] = s
		}
		return s
	}
	for i := range ps {
		if s := day(ps[i].Day); s != nil {
			s.Punches++
			if !slices.Contains(s.SiteIDs, ps[i].SiteID) {
				s.SiteIDs = append(s.SiteIDs, ps[i].SiteID)
			}
		}
	}
	for _, st := range pairPunches(ps) {
		switch {
		case st.in == nil:
			if s := day(st.out.Day); s != nil {
				s.Unpaired++
			}
		case st.out == nil:
			if s := day(st.in.Day); s != nil {
				s.Unpaired++
				if s.FirstIn == nil || st.in.OccurredAt.Before(*s.FirstIn) {
					at := st.in.OccurredAt
					s.FirstIn = &at
				}
			}
		default:
			s := day(st.in.Day)
			if s == nil {
				continue
			}
			in, out := st.in.OccurredAt, st.out.OccurredAt
			if s.FirstIn == nil || in.Before(*s.FirstIn) {
				s.FirstIn = &in
			}
			if s.LastOut == nil || out.After(*s.LastOut) {
				s.LastOut = &out
			}
			s.Minutes += int(out.Sub(in) / time.Minute)
		}
	}
	out := make([]DaySummary, 0, len(days))
	for _, s := range days {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b DaySummary) int { return a.Day.Compare(b.Day) })
	return out
}

// Tally sums the days of Summarise into a timesheet's totals.
func Tally(days []DaySummary) Totals {
	var t Totals
	for _, d := range days {
		t.Minutes += d.Minutes
		t.Punches += d.Punches
		t.Unpaired += d.Unpaired
		if d.Minutes > 0 {
			t.Days++
		}
	}
	return t
}
