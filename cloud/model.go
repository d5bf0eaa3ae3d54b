package cloud

import "time"

// Mode separates live data from the test-mode sandbox copy.
type Mode string

// The two modes.
const (
	ModeLive Mode = "live"
	ModeTest Mode = "test"
)

// Valid reports whether m is live or test.
func (m Mode) Valid() bool { return m == ModeLive || m == ModeTest }

// Tenant is the organisation and mode every object belongs to. Every Store
// read and write is confined to one tenant: another tenant's objects are
// not found.
type Tenant struct {
	OrgID string
	Mode  Mode
}

// Organisation is a customer account; it holds both modes.
type Organisation struct {
	ID        string
	Name      string
	Plan      Plan
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Address is a site's postal address. Every part but Line1 and Country may
// be empty.
type Address struct {
	Line1      string
	Line2      string
	City       string
	Region     string
	PostalCode string
	Country    string // ISO 3166-1 alpha-2, upper case
}

// Site is a building or campus with gates and a time zone.
type Site struct {
	ID       string
	Tenant   Tenant
	Name     string
	Timezone string // IANA name
	Address  *Address
	Zone     *AttendanceZone // where phones may punch; nil when none is set
	// WaitLimitMinutes is how long a visitor may wait for someone before
	// the kiosk's queue highlights them and whoever they wait with is
	// reminded (docs/decisions.md, "Waiting reminders"); 0 stands for
	// DefaultWaitLimitMinutes (WaitLimit).
	WaitLimitMinutes int
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// WaitLimit is the site's wait limit in minutes: WaitLimitMinutes, or
// DefaultWaitLimitMinutes when it is not set.
func (s Site) WaitLimit() int {
	if s.WaitLimitMinutes <= 0 {
		return DefaultWaitLimitMinutes
	}
	return s.WaitLimitMinutes
}

// Direction says which way a gate lets people through.
type Direction string

// The gate directions.
const (
	DirectionEntry Direction = "entry"
	DirectionExit  Direction = "exit"
	DirectionBoth  Direction = "both"
)

// Valid reports whether d is one of the three directions.
func (d Direction) Valid() bool {
	return d == DirectionEntry || d == DirectionExit || d == DirectionBoth
}

// Gate is a turnstile or door at a site.
type Gate struct {
	ID        string
	Tenant    Tenant
	SiteID    string
	Name      string
	Direction Direction
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Person is someone who works for the organisation: a host, a team member,
// an employee who clocks in.
type Person struct {
	ID            string
	Tenant        Tenant
	Name          string
	Email         string // empty when none; unique per tenant, compared case-insensitively
	Phone         string // E.164; empty when none
	JobTitle      string // empty when none
	SiteID        string // home site; empty when none
	Active        bool
	DeactivatedAt *time.Time
	// PassIssuedAt is the issue time of the person's one current personal
	// pass, in whole seconds: the token signed for it is their pass, and a
	// token of any other issue time was replaced. Set at creation and moved
	// on by a reissue.
	PassIssuedAt time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Member is a team member as a team shows it.
type Member struct {
	ID       string
	Name     string
	JobTitle string
	Active   bool
}

// Team is who a visitor comes to see when it is not one person.
type Team struct {
	ID                string
	Tenant            Tenant
	Name              string
	SiteID            string // empty: the team is at every site
	LeadID            string // empty: no lead
	VisitorsCanChoose bool
	Archived          bool
	MemberIDs         []string // in the order given
	Members           []Member // filled on read, in MemberIDs order
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// Position is where a page of a newest-first list starts: after the row
// with this creation time and ID.
type Position struct {
	CreatedAt time.Time
	ID        string
}

// Page asks for one page of a newest-first list.
type Page struct {
	Limit int       // rows wanted, 1..100
	After *Position // nil for the first page
}

// SiteFilter narrows ListSites.
type SiteFilter struct{}

// GateFilter narrows ListGates.
type GateFilter struct {
	SiteID string
}

// PersonFilter narrows ListPeople. Empty fields do not filter.
type PersonFilter struct {
	Query  string // folded (Fold) substring of name or email
	SiteID string
	Email  string // exact, case-insensitive
	Active *bool
}

// TeamFilter narrows ListTeams.
type TeamFilter struct {
	Query             string // folded (Fold) substring of the name
	SiteID            string // teams at this site and teams at every site
	VisitorsCanChoose *bool
	IncludeArchived   bool
}
