package mqttsync

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/shared/hardware"
	"github.com/svc-vms/svc/shared/ids"
	"github.com/svc-vms/svc/sync/protocol"
)

// bigVisit is a visit near the largest the protocol allows: long names
// and many gates.
func bigVisit() protocol.Visit {
	v := newVisit(strings.Repeat("n", 200))
	v.HostName = strings.Repeat("h", 200)
	for range 20 {
		v.Rules.GateIDs = append(v.Rules.GateIDs, ids.New(ids.Gate))
	}
	return v
}

func TestSplitChanges(t *testing.T) {
	for _, tt := range []struct {
		name  string
		n     int
		big   bool
		runs  int // at least
		check func(t *testing.T, runs [][]protocol.Change)
	}{
		{"none", 0, false, 0, nil},
		{"one", 1, false, 1, nil},
		{"exactly MaxChanges", protocol.MaxChanges, false, 1, nil},
		{"one more than MaxChanges", protocol.MaxChanges + 1, false, 2, nil},
		{"large changes split by bytes", protocol.MaxChanges, true, 2, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cs []protocol.Change
			for i := range tt.n {
				v := newVisit("V")
				if tt.big {
					v = bigVisit()
				}
				cs = append(cs, protocol.Change{Seq: uint64(i + 1), At: t0, Visit: &v})
			}
			runs, err := splitChanges(cs)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, len(runs), tt.runs)
			next := uint64(1)
			for _, run := range runs {
				require.NotEmpty(t, run)
				assert.LessOrEqual(t, len(run), protocol.MaxChanges)
				assert.Equal(t, next, run[0].Seq, "runs follow on")
				next = run[len(run)-1].Seq + 1
				b, err := protocol.Encode(&protocol.Reply{Kind: protocol.ReplyChanges, RequestID: strings.Repeat("r", 64), Changes: run, More: true})
				require.NoError(t, err, "each run fits a message")
				assert.LessOrEqual(t, len(b), protocol.MaxMessage)
			}
			assert.Equal(t, uint64(tt.n+1), next, "nothing lost")
		})
	}
}

func TestSplitSnapshot(t *testing.T) {
	for _, tt := range []struct {
		name                  string
		visits, gates, people int
		big                   bool
		parts                 int // at least
	}{
		{"empty", 0, 0, 0, false, 1},
		{"small", 10, 2, 5, false, 1},
		{"exactly MaxSnapshot visits", protocol.MaxSnapshot, 1, 0, false, 1},
		{"more visits than a part holds", 2*protocol.MaxSnapshot + 1, 1, 0, false, 3},
		{"more gates than a part holds", 3, protocol.MaxSnapshot + 5, 0, false, 2},
		{"more people than a part holds", 3, 1, protocol.MaxSnapshot + 1, false, 2},
		{"large visits split by bytes", 900, 1, 0, true, 2},
		{"large people and visits split by bytes", 600, 1, protocol.MaxSnapshot, true, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hw := &protocol.EdgeHardware{EdgeID: ids.New(ids.Edge), Hardware: &hardware.Document{Gates: []hardware.Gate{}}}
			s := protocol.Snapshot{Seq: 77, Settings: &protocol.Settings{Timezone: "Europe/Berlin"}, Hardware: hw}
			for range tt.gates {
				s.Gates = append(s.Gates, protocol.Gate{ID: ids.New(ids.Gate), Name: "G", Direction: "entry"})
			}
			s.Keys = []protocol.Key{{ID: "0a0b0c0d", Public: make([]byte, 32)}}
			for range tt.people {
				p := protocol.Person{ID: ids.New(ids.Person), Name: "P", Active: true, PassIssuedAt: t0.Unix()}
				if tt.big {
					p.Name = strings.Repeat("p", 200)
				}
				s.People = append(s.People, p)
			}
			for range tt.visits {
				v := newVisit("V")
				if tt.big {
					v = bigVisit()
				}
				s.Visits = append(s.Visits, v)
			}
			parts, err := splitSnapshot(s)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, len(parts), tt.parts)
			var visits, gates, keys, people, settings, hwParts int
			for i, p := range parts {
				assert.Equal(t, i+1, p.Part)
				assert.Equal(t, len(parts), p.Parts)
				assert.Equal(t, uint64(77), p.Seq)
				b, err := protocol.Encode(&protocol.Reply{Kind: protocol.ReplySnapshot, RequestID: strings.Repeat("r", 64), Snapshot: &p})
				require.NoError(t, err, "part %d fits a message", i+1)
				assert.LessOrEqual(t, len(b), protocol.MaxMessage)
				visits, gates, keys, people = visits+len(p.Visits), gates+len(p.Gates), keys+len(p.Keys), people+len(p.People)
				if p.Settings != nil {
					settings++
				}
				if p.Hardware != nil {
					hwParts++
				}
			}
			assert.Equal(t, tt.visits, visits)
			assert.Equal(t, tt.gates, gates)
			assert.Equal(t, tt.people, people)
			assert.Equal(t, 1, keys)
			assert.Equal(t, 1, settings, "settings in one part only")
			assert.NotNil(t, parts[0].Settings)
			assert.Equal(t, 1, hwParts, "the edge's hardware in one part only")
			assert.Equal(t, hw, parts[0].Hardware)
		})
	}
}

func TestInbox(t *testing.T) {
	q := newInbox(3, 10)
	for i := range 4 {
		ok := q.push(message{topic: string(rune('a' + i))})
		assert.Equal(t, i < 3, ok, "push %d", i)
	}
	assert.Equal(t, uint64(1), q.droppedCount())
	assert.False(t, q.push(message{topic: "big", payload: make([]byte, 11)}), "more bytes than the inbox holds")
	select {
	case <-q.ready:
	default:
		t.Fatal("ready not signalled")
	}
	got := q.take(2)
	assert.Equal(t, []message{{topic: "a"}, {topic: "b"}}, got)
	select {
	case <-q.ready:
	default:
		t.Fatal("ready not signalled again while messages remain")
	}
	assert.Equal(t, []message{{topic: "c"}}, q.take(0))
	assert.Empty(t, q.take(0))
	assert.True(t, q.push(message{topic: "d", payload: make([]byte, 10)}), "room again once taken")
}

func TestBackoff(t *testing.T) {
	b := backoff{min: 100, max: 1000}
	for range 8 {
		d := b.next()
		assert.GreaterOrEqual(t, int64(d), int64(b.cur)/2)
		assert.LessOrEqual(t, int64(d), int64(b.cur))
	}
	assert.Equal(t, int64(1000), int64(b.cur), "capped at max")
	b.reset()
	assert.LessOrEqual(t, int64(b.next()), int64(100), "from min again")
}
