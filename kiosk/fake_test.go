package kiosk

import (
	"context"
	"github.com/svc-vms/svc/shared/textfold"
	"slices"
	"strings"
	"sync"
	"time"
)

// memStore is a hand-written Store for the handlers' unit tests: the
// edge's real one (on bbolt) has its own tests in package edge.
type memStore struct {
	mu       sync.Mutex
	site     Site
	people   []Person
	teams    []Team
	types    []VisitType
	visitors []Visitor
	visits   map[string]*Visit
	online   bool
	pending  int
	walkIns  []WalkIn
	checkIn  func(CheckIn) (Visit, error)
	failWith error // every write fails with it, as a full disk would
}

func newMemStore() *memStore {
	return &memStore{
		site:   Site{ID: "site_01h2xcejqtf2nbrexx3vqjhp41", Name: "Harbour Office", Timezone: "UTC", Location: time.UTC},
		visits: map[string]*Visit{},
		online: true,
		types:  []VisitType{{Key: "meeting", Name: "Meeting", Schema: []byte(`{"type":"object","properties":{}}`)}},
	}
}

var _ Store = (*memStore)(nil)

func (m *memStore) Site() Site { return m.site }

func (m *memStore) SearchPeople(q string, limit int) []Person {
	var out []Person
	for _, p := range m.people {
		if n := textfold.Fold(p.Name); strings.HasPrefix(n, textfold.Fold(q)) || strings.Contains(n, " "+textfold.Fold(q)) {
			out = append(out, p)
		}
	}
	return out[:min(len(out), limit)]
}

func (m *memStore) Person(id string) (Person, bool) {
	i := slices.IndexFunc(m.people, func(p Person) bool { return p.ID == id })
	if i < 0 {
		return Person{}, false
	}
	return m.people[i], true
}

func (m *memStore) Teams() []Team { return m.teams }

func (m *memStore) Team(id string) (Team, bool) {
	i := slices.IndexFunc(m.teams, func(t Team) bool { return t.ID == id })
	if i < 0 {
		return Team{}, false
	}
	return m.teams[i], true
}

func (m *memStore) VisitTypes() []VisitType { return m.types }

func (m *memStore) VisitType(key string) (VisitType, bool) {
	i := slices.IndexFunc(m.types, func(t VisitType) bool { return t.Key == key })
	if i < 0 {
		return VisitType{}, false
	}
	return m.types[i], true
}

func (m *memStore) Visitors(name string, limit int) []Visitor {
	var out []Visitor
	for _, v := range m.visitors {
		if textfold.Fold(v.Name) == textfold.Fold(name) {
			out = append(out, v)
		}
	}
	return out[:min(len(out), limit)]
}

func (m *memStore) Visit(id string) (Visit, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.visits[id]
	if !ok {
		return Visit{}, false
	}
	return *v, true
}

func (m *memStore) VisitByCode(code string) (Visit, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.visits {
		if v.Code == code {
			return *v, true
		}
	}
	return Visit{}, false
}

func (m *memStore) list(keep func(*Visit) bool) []Visit {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Visit
	for _, v := range m.visits {
		if keep(v) {
			out = append(out, *v)
		}
	}
	slices.SortFunc(out, func(a, b Visit) int { return a.WaitingSince.Compare(b.WaitingSince) })
	return out
}

func (m *memStore) Waiting() []Visit { return m.list(func(v *Visit) bool { return v.NeedsSomeone }) }
func (m *memStore) OnSite() []Visit {
	return m.list(func(v *Visit) bool { return v.Status == "checked_in" })
}
func (m *memStore) Sync() SyncState { return SyncState{Online: m.online, Pending: m.pending} }

func (m *memStore) WalkIn(ctx context.Context, in WalkIn) (Visit, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWith != nil {
		return Visit{}, m.failWith
	}
	if v, ok := m.visits[in.ID]; ok {
		return *v, nil
	}
	if in.Visitor.Phone != "" && !strings.HasPrefix(in.Visitor.Phone, "+") {
		return Visit{}, &ValidationError{Fields: map[string]string{"visitor.phone": "must be a phone number in E.164 format"}}
	}
	m.walkIns = append(m.walkIns, in)
	at := in.At
	v := &Visit{ID: in.ID, Status: "checked_in", Type: in.Type, Source: "walk_in", Visitor: in.Visitor,
		CheckedInAt: &at, WaitingSince: at, Pass: "W1:" + in.ID, Pending: !m.online}
	switch {
	case in.HostID != "":
		p, _ := m.Person(in.HostID)
		v.Audience, v.Host = "person", &Ref{ID: p.ID, Name: p.Name}
	case in.TeamID != "":
		t, _ := m.Team(in.TeamID)
		v.Audience, v.Team, v.NeedsSomeone = "team", &Ref{ID: t.ID, Name: t.Name}, true
	default:
		v.Audience, v.NeedsSomeone = "desk", true
	}
	m.visits[v.ID] = v
	m.pending++
	return *v, nil
}

func (m *memStore) CheckIn(ctx context.Context, in CheckIn) (Visit, error) { return m.checkIn(in) }

func (m *memStore) CheckOut(ctx context.Context, id string, by Desk) (Visit, error) {
	at := by.At
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.visits[id]
	switch {
	case !ok:
		return Visit{}, ErrNotFound
	case v.Status != "checked_in":
		return Visit{}, &StateError{Action: "check_out", Status: v.Status}
	}
	v.Status, v.CheckedOutAt, v.NeedsSomeone = "checked_out", &at, false
	return *v, nil
}

func (m *memStore) Take(ctx context.Context, id, personID string, by Desk) (Visit, error) {
	p, ok := m.Person(personID)
	m.mu.Lock()
	defer m.mu.Unlock()
	v, vok := m.visits[id]
	switch {
	case !vok || !ok:
		return Visit{}, ErrNotFound
	case v.Host != nil:
		return Visit{}, &StateError{Action: "take", Status: v.Status}
	}
	v.Host, v.NeedsSomeone = &Ref{ID: p.ID, Name: p.Name}, false
	return *v, nil
}

func (m *memStore) HandOver(ctx context.Context, id string, to Receiver, by Desk) (Visit, error) {
	at := by.At
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.visits[id]
	switch {
	case !ok:
		return Visit{}, ErrNotFound
	case v.Host != nil:
		return Visit{}, &StateError{Action: "hand_over", Status: v.Status}
	}
	v.WaitsWith, v.Receiver, v.WaitingSince = to.To, nil, at
	switch to.To {
	case "team":
		t, _ := m.Team(to.TeamID)
		v.Receiver = &Ref{ID: t.ID, Name: t.Name}
	case "person":
		for _, p := range m.people {
			if p.ID == to.PersonID {
				v.Receiver = &Ref{ID: p.ID, Name: p.Name}
			}
		}
	}
	return *v, nil
}

func (m *memStore) VisitByPass(token string) (Visit, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.visits {
		if v.Pass != "" && v.Pass == token {
			return *v, true
		}
	}
	return Visit{}, false
}
