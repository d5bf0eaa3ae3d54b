package cloud

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // sites name IANA zones; servers and appliances may lack zoneinfo
	"unicode"

	"github.com/svc-vms/svc/shared/contact"
	"github.com/svc-vms/svc/shared/ids"
)

// Limits on resource fields (docs/decisions.md).
const (
	MaxNameLen    = contact.MaxNameLen
	MaxEmailLen   = contact.MaxEmailLen
	MaxMembers    = 500
	MaxQueryLen   = 80
	MaxAddressLen = 200
)

// Optional is an input field that may be left out. For nullable fields the
// zero Value means null.
type Optional[T any] struct {
	Set   bool
	Value T
}

// Some returns a set Optional.
func Some[T any](v T) Optional[T] { return Optional[T]{Set: true, Value: v} }

// Service applies the domain's rules on top of a Store. Transports call it;
// it never sees HTTP.
type Service struct {
	store   Store // the store given, telling onChange of its feed writes
	now     func() time.Time
	linkKey []byte // signs pass links; LoadSecrets sets it
	render  EventRenderer

	changeMu sync.Mutex
	onChange []func()

	webhookWake   chan struct{} // a token when events committed; WebhookWake
	webhookPolicy WebhookPolicy
	webhookLease  time.Duration // WebhookLease when 0; SetWebhookLease

	accounts     BrokerAccounts // edges' accounts at an external broker; nil for none
	accountsWake chan struct{}  // a token when an edge was revoked; BrokerAccountsWake

	periodsChecked sync.Map // Tenant → time.Time: ClosePeriods has nothing to do before it
}

// NewService returns a Service on store; now is its clock.
func NewService(store Store, now func() time.Time) *Service {
	s := &Service{now: now, webhookWake: make(chan struct{}, 1), accountsWake: make(chan struct{}, 1)}
	s.store = eventStore{Store: feedStore{Store: store, changed: s.changed}, s: s}
	return s
}

// WebhookWake returns a channel that holds a token once events have
// committed through this service: the webhook dispatcher waits on it
// between polls, so a change's first delivery attempt follows at once.
func (s *Service) WebhookWake() <-chan struct{} { return s.webhookWake }

func (s *Service) wakeWebhooks() {
	select {
	case s.webhookWake <- struct{}{}:
	default:
	}
}

// Store returns the store the service writes to.
func (s *Service) Store() Store { return s.store }

// Now returns the service clock's time, in UTC and to the microsecond, as
// stored.
func (s *Service) Now() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Fold is the case folding searches compare with: q and stored names are
// both folded.
func Fold(s string) string { return strings.ToLower(s) }

// SearchIndexed reports whether a store's name search (the q of
// ListPeople and ListTeams, folded) can be served by its trigram index:
// when q holds three letters or digits in a row, every name holding q
// holds their trigram. A shorter q is matched on the rows in list order,
// which stops at a page of matches (docs/decisions.md, "Indexed lists
// and name search (issue 20)").
func SearchIndexed(q string) bool {
	run := 0
	for _, r := range q {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			run = 0
			continue
		}
		if run++; run == 3 {
			return true
		}
	}
	return false
}

// ValidPhone reports whether s is an E.164 number.
func ValidPhone(s string) bool { return contact.ValidPhone(s) }

// ValidEmail reports whether s is a bare email address.
func ValidEmail(s string) bool { return contact.ValidEmail(s) }

// ValidTimezone reports whether s names an IANA time zone.
func ValidTimezone(s string) bool {
	if s == "" || s == "Local" || strings.HasPrefix(s, "/") || strings.Contains(s, "..") {
		return false
	}
	_, err := time.LoadLocation(s)
	return err == nil
}

func checkText(v *ValidationError, field, s string, required bool, max int) {
	if msg := contact.CheckText(s, required, max); msg != "" {
		v.Add(field, "%s", msg)
	}
}

func checkID(v *ValidationError, field, prefix, id string) bool {
	if id == "" {
		v.Add(field, "is required")
		return false
	}
	if !ids.Valid(prefix, id) {
		v.Add(field, "must be a %s ID (%s_ followed by 26 characters)", prefix, prefix)
		return false
	}
	return true
}

// checkSite adds a problem unless id names a site of the tenant.
func (s *Service) checkSite(ctx context.Context, v *ValidationError, t Tenant, field, id string) error {
	if !checkID(v, field, ids.Site, id) {
		return nil
	}
	if _, err := s.store.Site(ctx, t, id); errors.Is(err, ErrNotFound) {
		v.Add(field, "no site with this ID")
	} else if err != nil {
		return err
	}
	return nil
}

// checkPeople adds a problem for each id that does not name a person of
// the tenant.
func (s *Service) checkPeople(ctx context.Context, v *ValidationError, t Tenant, field func(i int) string, list []string) error {
	var wellFormed []string
	for i, id := range list {
		if checkID(v, field(i), ids.Person, id) {
			wellFormed = append(wellFormed, id)
		}
	}
	if len(wellFormed) == 0 {
		return nil
	}
	found, err := s.store.People(ctx, t, wellFormed)
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(found))
	for _, p := range found {
		have[p.ID] = true
	}
	for i, id := range list {
		if ids.Valid(ids.Person, id) && !have[id] {
			v.Add(field(i), "no person with this ID")
		}
	}
	return nil
}

// Organisation returns the organisation of the tenant.
func (s *Service) Organisation(ctx context.Context, t Tenant) (Organisation, error) {
	return s.store.Organisation(ctx, t.OrgID)
}

// SiteInput creates or changes a site.
type SiteInput struct {
	Name     Optional[string]
	Timezone Optional[string]
	Address  Optional[*Address]
	Geofence Optional[*Geofence]     // nil clears
	Wifi     Optional[[]WifiNetwork] // empty clears
	// WaitLimitMinutes is the site's wait limit, MinWaitLimitMinutes to
	// MaxWaitLimitMinutes; DefaultWaitLimitMinutes when a new site has
	// none.
	WaitLimitMinutes Optional[int]
}

// checkZone checks a site's geofence and Wi-Fi networks.
func checkZone(v *ValidationError, in SiteInput) {
	if g := in.Geofence.Value; in.Geofence.Set && g != nil {
		checkGeoPoint(v, "geofence", &GeoPoint{Latitude: g.Latitude, Longitude: g.Longitude})
		if g.RadiusM < 10 || g.RadiusM > 10000 {
			v.Add("geofence.radius_m", "must be between 10 and 10000 metres")
		}
	}
	if in.Wifi.Set {
		if len(in.Wifi.Value) > MaxWifiNetworks {
			v.Add("wifi_networks", "may list at most %d networks", MaxWifiNetworks)
		}
		for i, n := range in.Wifi.Value {
			checkWifi(v, fmt.Sprintf("wifi_networks[%d]", i), n, true)
		}
	}
}

// applyZone sets the zone parts in changes on site.
func applyZone(site *Site, in SiteInput) {
	if !in.Geofence.Set && !in.Wifi.Set {
		return
	}
	z := AttendanceZone{}
	if site.Zone != nil {
		z = *site.Zone
	}
	if in.Geofence.Set {
		z.Geofence = in.Geofence.Value
	}
	if in.Wifi.Set {
		z.Wifi = nil
		for _, n := range in.Wifi.Value {
			n.BSSID = strings.ToLower(n.BSSID)
			z.Wifi = append(z.Wifi, n)
		}
	}
	site.Zone = &z
	if z.Empty() {
		site.Zone = nil
	}
}

func checkSiteInput(v *ValidationError, in SiteInput, create bool) {
	if create || in.Name.Set {
		checkText(v, "name", in.Name.Value, true, MaxNameLen)
	}
	if (create || in.Timezone.Set) && !ValidTimezone(in.Timezone.Value) {
		v.Add("timezone", "must be an IANA time zone name such as Europe/London")
	}
	if n := in.WaitLimitMinutes.Value; in.WaitLimitMinutes.Set && (n < MinWaitLimitMinutes || n > MaxWaitLimitMinutes) {
		v.Add("wait_limit_minutes", "must be an integer from %d to %d", MinWaitLimitMinutes, MaxWaitLimitMinutes)
	}
	if a := in.Address.Value; in.Address.Set && a != nil {
		checkText(v, "address.line1", a.Line1, true, MaxAddressLen)
		checkText(v, "address.line2", a.Line2, false, MaxAddressLen)
		checkText(v, "address.city", a.City, false, MaxAddressLen)
		checkText(v, "address.region", a.Region, false, MaxAddressLen)
		checkText(v, "address.postal_code", a.PostalCode, false, 20)
		if len(a.Country) != 2 || strings.ToUpper(a.Country) != a.Country || !isLetters(a.Country) {
			v.Add("address.country", "must be an ISO 3166-1 alpha-2 code in capitals, such as GB")
		}
	}
}

func isLetters(s string) bool {
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

// ValidateSite returns a *ValidationError listing every problem with in,
// or nil. create says whether in is for a new site.
func (s *Service) ValidateSite(_ context.Context, _ Tenant, in SiteInput, create bool) error {
	var v ValidationError
	checkSiteInput(&v, in, create)
	checkZone(&v, in)
	return v.Err()
}

// CreateSite creates a site.
func (s *Service) CreateSite(ctx context.Context, t Tenant, in SiteInput) (Site, error) {
	if err := s.ValidateSite(ctx, t, in, true); err != nil {
		return Site{}, err
	}
	now := s.Now()
	site := Site{ID: ids.New(ids.Site), Tenant: t, Name: in.Name.Value, Timezone: in.Timezone.Value,
		Address: in.Address.Value, WaitLimitMinutes: DefaultWaitLimitMinutes, CreatedAt: now, UpdatedAt: now}
	if in.WaitLimitMinutes.Set {
		site.WaitLimitMinutes = in.WaitLimitMinutes.Value
	}
	applyZone(&site, in)
	if err := respond(ctx, site); err != nil {
		return Site{}, err
	}
	if err := s.store.CreateSite(ctx, site); err != nil {
		return Site{}, fmt.Errorf("create site: %w", err)
	}
	return site, nil
}

// UpdateSite changes the fields of in that are set.
func (s *Service) UpdateSite(ctx context.Context, t Tenant, id string, in SiteInput) (Site, error) {
	if err := s.ValidateSite(ctx, t, in, false); err != nil {
		return Site{}, err
	}
	return s.store.UpdateSite(ctx, t, id, func(site *Site) error {
		if in.Name.Set {
			site.Name = in.Name.Value
		}
		if in.Timezone.Set {
			site.Timezone = in.Timezone.Value
		}
		if in.WaitLimitMinutes.Set {
			site.WaitLimitMinutes = in.WaitLimitMinutes.Value
		}
		applyZone(site, in)
		if in.Address.Set {
			site.Address = in.Address.Value
		}
		site.UpdatedAt = s.Now()
		return nil
	})
}

// GateInput creates or changes a gate. SiteID is for create only.
type GateInput struct {
	SiteID    Optional[string]
	Name      Optional[string]
	Direction Optional[Direction]
}

func checkGateInput(v *ValidationError, in GateInput, create bool) {
	if create || in.Name.Set {
		checkText(v, "name", in.Name.Value, true, MaxNameLen)
	}
	if (create || in.Direction.Set) && !in.Direction.Value.Valid() {
		v.Add("direction", "must be one of entry, exit, both")
	}
}

// ValidateGate is ValidateSite for gates.
func (s *Service) ValidateGate(ctx context.Context, t Tenant, in GateInput, create bool) error {
	var v ValidationError
	if create {
		if err := s.checkSite(ctx, &v, t, "site_id", in.SiteID.Value); err != nil {
			return err
		}
	}
	checkGateInput(&v, in, create)
	return v.Err()
}

// CreateGate creates a gate at a site of the tenant.
func (s *Service) CreateGate(ctx context.Context, t Tenant, in GateInput) (Gate, error) {
	if err := s.ValidateGate(ctx, t, in, true); err != nil {
		return Gate{}, err
	}
	now := s.Now()
	g := Gate{ID: ids.New(ids.Gate), Tenant: t, SiteID: in.SiteID.Value, Name: in.Name.Value,
		Direction: in.Direction.Value, CreatedAt: now, UpdatedAt: now}
	if err := respond(ctx, g); err != nil {
		return Gate{}, err
	}
	if err := s.store.CreateGate(ctx, g); err != nil {
		return Gate{}, fmt.Errorf("create gate: %w", err)
	}
	return g, nil
}

// UpdateGate changes a gate's name or direction.
func (s *Service) UpdateGate(ctx context.Context, t Tenant, id string, in GateInput) (Gate, error) {
	if err := s.ValidateGate(ctx, t, in, false); err != nil {
		return Gate{}, err
	}
	return s.store.UpdateGate(ctx, t, id, func(g *Gate) error {
		if in.Name.Set {
			g.Name = in.Name.Value
		}
		if in.Direction.Set {
			g.Direction = in.Direction.Value
		}
		g.UpdatedAt = s.Now()
		return nil
	})
}

// PersonInput creates or changes a person. Empty values of set nullable
// fields clear them.
type PersonInput struct {
	Name     Optional[string]
	Email    Optional[string]
	Phone    Optional[string]
	JobTitle Optional[string]
	SiteID   Optional[string]
}

func (s *Service) checkPersonInput(ctx context.Context, v *ValidationError, t Tenant, in PersonInput, create bool) error {
	if create || in.Name.Set {
		checkText(v, "name", in.Name.Value, true, MaxNameLen)
	}
	if in.Email.Value != "" && !ValidEmail(in.Email.Value) {
		v.Add("email", "must be an email address such as ada@example.com")
	}
	if in.Phone.Value != "" && !ValidPhone(in.Phone.Value) {
		v.Add("phone", "must be an E.164 number such as +442071838750")
	}
	checkText(v, "job_title", in.JobTitle.Value, false, MaxNameLen)
	if in.SiteID.Value != "" {
		return s.checkSite(ctx, v, t, "site_id", in.SiteID.Value)
	}
	return nil
}

// ValidatePerson is ValidateSite for people.
func (s *Service) ValidatePerson(ctx context.Context, t Tenant, in PersonInput, create bool) error {
	var v ValidationError
	if err := s.checkPersonInput(ctx, &v, t, in, create); err != nil {
		return err
	}
	return v.Err()
}

// CreatePerson creates an active person, with a personal pass issued at
// their creation (PersonPass).
func (s *Service) CreatePerson(ctx context.Context, t Tenant, in PersonInput) (Person, error) {
	if err := s.ValidatePerson(ctx, t, in, true); err != nil {
		return Person{}, err
	}
	now := s.Now()
	p := Person{ID: ids.New(ids.Person), Tenant: t, Name: in.Name.Value, Email: in.Email.Value,
		Phone: in.Phone.Value, JobTitle: in.JobTitle.Value, SiteID: in.SiteID.Value, Active: true,
		PassIssuedAt: now.Truncate(time.Second), CreatedAt: now, UpdatedAt: now}
	if err := respond(ctx, p); err != nil {
		return Person{}, err
	}
	if err := s.store.CreatePerson(ctx, p); err != nil {
		return Person{}, fmt.Errorf("create person: %w", err)
	}
	return p, nil
}

// UpdatePerson changes the fields of in that are set.
func (s *Service) UpdatePerson(ctx context.Context, t Tenant, id string, in PersonInput) (Person, error) {
	if err := s.ValidatePerson(ctx, t, in, false); err != nil {
		return Person{}, err
	}
	return s.store.UpdatePerson(ctx, t, id, func(p *Person) error {
		if in.Name.Set {
			p.Name = in.Name.Value
		}
		if in.Email.Set {
			p.Email = in.Email.Value
		}
		if in.Phone.Set {
			p.Phone = in.Phone.Value
		}
		if in.JobTitle.Set {
			p.JobTitle = in.JobTitle.Value
		}
		if in.SiteID.Set {
			p.SiteID = in.SiteID.Value
		}
		p.UpdatedAt = s.Now()
		return nil
	})
}

// SetPersonActive deactivates (active false) or reactivates a person. Doing
// it to a person already in that state returns a *StateError.
func (s *Service) SetPersonActive(ctx context.Context, t Tenant, id string, active bool) (Person, error) {
	return s.store.UpdatePerson(ctx, t, id, func(p *Person) error {
		if p.Active == active {
			st, action := "active", "reactivate"
			if !active {
				st, action = "inactive", "deactivate"
			}
			return &StateError{Object: "person", State: st, Action: action}
		}
		now := s.Now()
		p.Active = active
		p.UpdatedAt = now
		if active {
			p.DeactivatedAt = nil
		} else {
			p.DeactivatedAt = &now
		}
		return respond(ctx, *p)
	})
}

// TeamInput creates or changes a team. Archived is for updates only.
type TeamInput struct {
	Name              Optional[string]
	SiteID            Optional[string]
	LeadID            Optional[string]
	MemberIDs         Optional[[]string]
	VisitorsCanChoose Optional[bool]
	Archived          Optional[bool]
}

func (s *Service) checkTeamInput(ctx context.Context, v *ValidationError, t Tenant, in TeamInput, create bool) error {
	if create || in.Name.Set {
		checkText(v, "name", in.Name.Value, true, MaxNameLen)
	}
	if in.SiteID.Value != "" {
		if err := s.checkSite(ctx, v, t, "site_id", in.SiteID.Value); err != nil {
			return err
		}
	}
	if len(in.MemberIDs.Value) > MaxMembers {
		v.Add("member_ids", "may hold at most %d people", MaxMembers)
		return nil
	}
	seen := make(map[string]int, len(in.MemberIDs.Value))
	for i, id := range in.MemberIDs.Value {
		if j, dup := seen[id]; dup {
			v.Add(fmt.Sprintf("member_ids[%d]", i), "repeats member_ids[%d]", j)
		}
		seen[id] = i
	}
	if err := s.checkPeople(ctx, v, t, func(i int) string { return fmt.Sprintf("member_ids[%d]", i) }, in.MemberIDs.Value); err != nil {
		return err
	}
	if in.LeadID.Value != "" {
		return s.checkPeople(ctx, v, t, func(int) string { return "lead_id" }, []string{in.LeadID.Value})
	}
	return nil
}

// checkLead holds the one rule that spans fields of a stored team: the lead
// is one of its members.
func checkLead(tm *Team, in TeamInput) error {
	if tm.LeadID == "" {
		return nil
	}
	for _, m := range tm.MemberIDs {
		if m == tm.LeadID {
			return nil
		}
	}
	field := "lead_id"
	if !in.LeadID.Set {
		field = "member_ids"
	}
	return &ValidationError{Fields: []FieldError{{Field: field, Message: "the lead must be one of the team's members"}}}
}

// ValidateTeam is ValidateSite for teams.
func (s *Service) ValidateTeam(ctx context.Context, t Tenant, in TeamInput, create bool) error {
	var v ValidationError
	if err := s.checkTeamInput(ctx, &v, t, in, create); err != nil {
		return err
	}
	return v.Err()
}

// CreateTeam creates a team.
//
// The reads that check it and its write are one transaction.
func (s *Service) CreateTeam(ctx context.Context, t Tenant, in TeamInput) (tm Team, err error) {
	err = s.atomic(ctx, func(ctx context.Context) error {
		tm, err = s.createTeam(ctx, t, in)
		return err
	})
	return tm, err
}

func (s *Service) createTeam(ctx context.Context, t Tenant, in TeamInput) (Team, error) {
	if err := s.ValidateTeam(ctx, t, in, true); err != nil {
		return Team{}, err
	}
	now := s.Now()
	tm := Team{ID: ids.New(ids.Team), Tenant: t, Name: in.Name.Value, SiteID: in.SiteID.Value,
		LeadID: in.LeadID.Value, VisitorsCanChoose: true, MemberIDs: in.MemberIDs.Value,
		CreatedAt: now, UpdatedAt: now}
	if tm.MemberIDs == nil {
		tm.MemberIDs = []string{}
	}
	if in.VisitorsCanChoose.Set {
		tm.VisitorsCanChoose = in.VisitorsCanChoose.Value
	}
	if err := checkLead(&tm, in); err != nil {
		return Team{}, err
	}
	// The team as a read returns it: its members in the order given.
	people, err := s.store.People(ctx, t, tm.MemberIDs)
	if err != nil {
		return Team{}, fmt.Errorf("create team: %w", err)
	}
	byID := make(map[string]Person, len(people))
	for _, p := range people {
		byID[p.ID] = p
	}
	tm.Members = make([]Member, 0, len(tm.MemberIDs))
	for _, id := range tm.MemberIDs {
		if p, ok := byID[id]; ok {
			tm.Members = append(tm.Members, Member{ID: p.ID, Name: p.Name, JobTitle: p.JobTitle, Active: p.Active})
		}
	}
	if err := respond(ctx, tm); err != nil {
		return Team{}, err
	}
	if err := s.store.CreateTeam(ctx, tm); err != nil {
		return Team{}, fmt.Errorf("create team: %w", err)
	}
	return tm, nil
}

// UpdateTeam changes the fields of in that are set.
func (s *Service) UpdateTeam(ctx context.Context, t Tenant, id string, in TeamInput) (Team, error) {
	if err := s.ValidateTeam(ctx, t, in, false); err != nil {
		return Team{}, err
	}
	return s.store.UpdateTeam(ctx, t, id, func(tm *Team) error {
		if in.Name.Set {
			tm.Name = in.Name.Value
		}
		if in.SiteID.Set {
			tm.SiteID = in.SiteID.Value
		}
		if in.LeadID.Set {
			tm.LeadID = in.LeadID.Value
		}
		if in.MemberIDs.Set {
			tm.MemberIDs = in.MemberIDs.Value
			if tm.MemberIDs == nil {
				tm.MemberIDs = []string{}
			}
		}
		if in.VisitorsCanChoose.Set {
			tm.VisitorsCanChoose = in.VisitorsCanChoose.Value
		}
		if in.Archived.Set {
			tm.Archived = in.Archived.Value
		}
		tm.UpdatedAt = s.Now()
		return checkLead(tm, in)
	})
}
