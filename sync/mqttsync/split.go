package mqttsync

import (
	"encoding/json"
	"fmt"

	"github.com/svc-vms/svc/sync/protocol"
)

// budget is how many bytes the objects of one message may take: MaxMessage
// less room for the envelope (version, kind, request ID, snapshot header
// and settings, which are measured separately anyway).
const budget = protocol.MaxMessage - 4<<10

// sizeOf is the length of v's JSON.
func sizeOf(v any) (int, error) {
	b, err := json.Marshal(v)
	return len(b), err
}

// splitChanges cuts a run of changes into consecutive runs that each fit
// one Batch or Reply: at most protocol.MaxChanges changes and budget bytes.
func splitChanges(cs []protocol.Change) ([][]protocol.Change, error) {
	var runs [][]protocol.Change
	start, size := 0, 0
	for i := range cs {
		n, err := sizeOf(&cs[i])
		if err != nil {
			return nil, fmt.Errorf("measure change %d: %w", cs[i].Seq, err)
		}
		if n+1 > budget {
			return nil, fmt.Errorf("change %d alone is %d bytes, more than a message holds", cs[i].Seq, n)
		}
		if i > start && (i-start == protocol.MaxChanges || size+n+1 > budget) {
			runs = append(runs, cs[start:i])
			start, size = i, 0
		}
		size += n + 1
	}
	if start < len(cs) {
		runs = append(runs, cs[start:])
	}
	return runs, nil
}

// splitSnapshot cuts a whole snapshot into parts that each fit one Reply:
// at most protocol.MaxSnapshot objects of a kind and budget bytes. The
// first part carries the settings and the edge's hardware; gates, keys,
// people, teams, visit types and visits follow in order.
func splitSnapshot(s protocol.Snapshot) ([]protocol.Snapshot, error) {
	newPart := func() protocol.Snapshot {
		return protocol.Snapshot{Seq: s.Seq, Gates: []protocol.Gate{}, Keys: []protocol.Key{}, Visits: []protocol.Visit{}, People: []protocol.Person{}}
	}
	cur := newPart()
	cur.Settings, cur.Hardware = s.Settings, s.Hardware
	size, err := sizeOf(&cur)
	if err != nil {
		return nil, fmt.Errorf("measure snapshot settings: %w", err)
	}
	var parts []protocol.Snapshot
	// room makes space for one object of n bytes whose kind already has
	// count in the current part, starting a new part when it is full.
	room := func(n int, count func(*protocol.Snapshot) int) {
		if count(&cur) < protocol.MaxSnapshot && size+n+1 <= budget {
			return
		}
		parts = append(parts, cur)
		cur = newPart()
		size, _ = sizeOf(&cur)
	}
	for i := range s.Gates {
		n, err := sizeOf(&s.Gates[i])
		if err != nil {
			return nil, fmt.Errorf("measure gate %s: %w", s.Gates[i].ID, err)
		}
		room(n, func(p *protocol.Snapshot) int { return len(p.Gates) })
		cur.Gates = append(cur.Gates, s.Gates[i])
		size += n + 1
	}
	for i := range s.Keys {
		n, err := sizeOf(&s.Keys[i])
		if err != nil {
			return nil, fmt.Errorf("measure key %s: %w", s.Keys[i].ID, err)
		}
		room(n, func(p *protocol.Snapshot) int { return len(p.Keys) })
		cur.Keys = append(cur.Keys, s.Keys[i])
		size += n + 1
	}
	for i := range s.People {
		n, err := sizeOf(&s.People[i])
		if err != nil {
			return nil, fmt.Errorf("measure person %s: %w", s.People[i].ID, err)
		}
		room(n, func(p *protocol.Snapshot) int { return len(p.People) })
		cur.People = append(cur.People, s.People[i])
		size += n + 1
	}
	for i := range s.Teams {
		n, err := sizeOf(&s.Teams[i])
		if err != nil {
			return nil, fmt.Errorf("measure team %s: %w", s.Teams[i].ID, err)
		}
		room(n, func(p *protocol.Snapshot) int { return len(p.Teams) })
		cur.Teams = append(cur.Teams, s.Teams[i])
		size += n + 1
	}
	for i := range s.VisitTypes {
		n, err := sizeOf(&s.VisitTypes[i])
		if err != nil {
			return nil, fmt.Errorf("measure visit type %s: %w", s.VisitTypes[i].Key, err)
		}
		room(n, func(p *protocol.Snapshot) int { return len(p.VisitTypes) })
		cur.VisitTypes = append(cur.VisitTypes, s.VisitTypes[i])
		size += n + 1
	}
	for i := range s.Visits {
		n, err := sizeOf(&s.Visits[i])
		if err != nil {
			return nil, fmt.Errorf("measure visit %s: %w", s.Visits[i].ID, err)
		}
		if n+1 > budget {
			return nil, fmt.Errorf("visit %s alone is %d bytes, more than a message holds", s.Visits[i].ID, n)
		}
		room(n, func(p *protocol.Snapshot) int { return len(p.Visits) })
		cur.Visits = append(cur.Visits, s.Visits[i])
		size += n + 1
	}
	parts = append(parts, cur)
	for i := range parts {
		parts[i].Part, parts[i].Parts = i+1, len(parts)
	}
	return parts, nil
}
