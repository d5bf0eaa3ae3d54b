package cloud

import (
	"context"
	"fmt"
)

// SeedResult is what Seed made: the organisation, its four keys (shown
// this once) and the IDs of each mode's objects.
type SeedResult struct {
	Organisation Organisation
	Keys         SeedKeys
	Live         SeedMode
	Test         SeedMode
}

// SeedKeys are the demo organisation's keys. The secret keys carry every
// scope.
type SeedKeys struct {
	SecretLive      string `json:"secret_live"`
	SecretTest      string `json:"secret_test"`
	PublishableLive string `json:"publishable_live"`
	PublishableTest string `json:"publishable_test"`
}

// SeedMode lists one mode's seeded objects.
type SeedMode struct {
	Sites  []SeedSite `json:"sites"`
	People []string   `json:"people"`
	Teams  []string   `json:"teams"`
}

// SeedSite is a seeded site with its gates.
type SeedSite struct {
	ID       string   `json:"id"`
	Timezone string   `json:"timezone"`
	Gates    []string `json:"gates"`
}

var seedSites = []struct {
	name, tz string
	addr     Address
	gates    []GateInput
}{
	{"London HQ", "Europe/London", Address{Line1: "1 Canada Square", City: "London", PostalCode: "E14 5AB", Country: "GB"},
		[]GateInput{{Name: Some("Main entrance"), Direction: Some(DirectionEntry)}, {Name: Some("Main exit"), Direction: Some(DirectionExit)}}},
	{"New York Office", "America/New_York", Address{Line1: "350 Fifth Avenue", City: "New York", Region: "NY", PostalCode: "10118", Country: "US"},
		[]GateInput{{Name: Some("Lobby turnstile"), Direction: Some(DirectionBoth)}}},
	{"Tokyo Studio", "Asia/Tokyo", Address{Line1: "1-1 Marunouchi", City: "Tokyo", Country: "JP"},
		[]GateInput{{Name: Some("Front door"), Direction: Some(DirectionBoth)}}},
}

var seedPeople = []string{
	"Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov", "Donald Knuth",
	"Margaret Hamilton", "Ken Thompson", "Dennis Ritchie", "Frances Allen", "John McCarthy", "Radia Perlman",
	"Tim Berners-Lee", "Katherine Johnson", "Claude Shannon", "Hedy Lamarr", "Linus Torvalds", "Shafi Goldwasser",
	"Niklaus Wirth", "Adele Goldberg", "Leslie Lamport", "Sophie Wilson", "Bjarne Stroustrup", "Karen Spärck Jones",
	"Guido van Rossum", "Lynn Conway", "Robert Pike", "Joan Clarke", "Tony Hoare", "Mary Kenneth Keller",
}

var seedJobs = []string{"Engineer", "Receptionist", "Office Manager", "Designer", "Recruiter", ""}

// seedTeams: name, site index (-1: every site), visitors can choose,
// archived. Several names share substrings ("Support", "Sales").
var seedTeams = []struct {
	name     string
	site     int
	choose   bool
	archived bool
}{
	{"Reception", -1, true, false},
	{"Customer Support", 0, true, false},
	{"IT Support", -1, true, false},
	{"Support Engineering", 1, false, false},
	{"Sales", 0, true, false},
	{"Inside Sales", 1, true, false},
	{"Sales Operations", -1, false, false},
	{"People & Culture", 0, true, false},
	{"Facilities", -1, true, false},
	{"Security", 2, false, false},
	{"Legacy Support", 0, true, true},
	{"Old Sales Desk", -1, false, true},
}

// Seed creates a new demo organisation on plan, populated in both modes
// with different IDs in each, and its four keys.
func (s *Service) Seed(ctx context.Context, name string, plan Plan) (SeedResult, error) {
	o, err := s.CreateOrganisation(ctx, name, plan)
	if err != nil {
		return SeedResult{}, err
	}
	res := SeedResult{Organisation: o}
	keys := []struct {
		mode Mode
		kind KeyKind
		dst  *string
	}{
		{ModeLive, KindSecret, &res.Keys.SecretLive}, {ModeTest, KindSecret, &res.Keys.SecretTest},
		{ModeLive, KindPublishable, &res.Keys.PublishableLive}, {ModeTest, KindPublishable, &res.Keys.PublishableTest},
	}
	for _, k := range keys {
		if _, *k.dst, err = s.CreateKey(ctx, Tenant{OrgID: o.ID, Mode: k.mode}, k.kind, nil); err != nil {
			return res, err
		}
	}
	if res.Live, err = s.seedMode(ctx, Tenant{OrgID: o.ID, Mode: ModeLive}); err != nil {
		return res, err
	}
	if res.Test, err = s.seedMode(ctx, Tenant{OrgID: o.ID, Mode: ModeTest}); err != nil {
		return res, err
	}
	return res, nil
}

func (s *Service) seedMode(ctx context.Context, t Tenant) (SeedMode, error) {
	var m SeedMode
	for _, ss := range seedSites {
		addr := ss.addr
		site, err := s.CreateSite(ctx, t, SiteInput{Name: Some(ss.name), Timezone: Some(ss.tz), Address: Some(&addr)})
		if err != nil {
			return m, fmt.Errorf("seed: %w", err)
		}
		out := SeedSite{ID: site.ID, Timezone: site.Timezone}
		for _, g := range ss.gates {
			g.SiteID = Some(site.ID)
			gate, err := s.CreateGate(ctx, t, g)
			if err != nil {
				return m, fmt.Errorf("seed: %w", err)
			}
			out.Gates = append(out.Gates, gate.ID)
		}
		m.Sites = append(m.Sites, out)
	}
	for i, name := range seedPeople {
		in := PersonInput{Name: Some(name), Email: Some(fmt.Sprintf("person%02d@example.com", i+1)),
			JobTitle: Some(seedJobs[i%len(seedJobs)]), SiteID: Some(m.Sites[i%len(m.Sites)].ID)}
		if i%5 == 0 {
			in.Phone = Some(fmt.Sprintf("+4479460%05d", i))
		}
		p, err := s.CreatePerson(ctx, t, in)
		if err != nil {
			return m, fmt.Errorf("seed: %w", err)
		}
		if i%7 == 6 { // some inactive
			if _, err := s.SetPersonActive(ctx, t, p.ID, false); err != nil {
				return m, fmt.Errorf("seed: %w", err)
			}
		}
		m.People = append(m.People, p.ID)
	}
	for i, st := range seedTeams {
		members := []string{m.People[i%len(m.People)], m.People[(i+7)%len(m.People)], m.People[(i+13)%len(m.People)]}
		in := TeamInput{Name: Some(st.name), LeadID: Some(members[0]), MemberIDs: Some(members), VisitorsCanChoose: Some(st.choose)}
		if st.site >= 0 {
			in.SiteID = Some(m.Sites[st.site].ID)
		}
		tm, err := s.CreateTeam(ctx, t, in)
		if err != nil {
			return m, fmt.Errorf("seed: %w", err)
		}
		if st.archived {
			if _, err := s.UpdateTeam(ctx, t, tm.ID, TeamInput{Archived: Some(true)}); err != nil {
				return m, fmt.Errorf("seed: %w", err)
			}
		}
		m.Teams = append(m.Teams, tm.ID)
	}
	return m, nil
}
