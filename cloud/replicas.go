package cloud

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Replica is a serve process sharing the store, as it last said
// (docs/decisions.md, "Running replicas (issue 19)").
type Replica struct {
	// ID is the process's instance ID, as its log lines carry it.
	ID string
	// RateLimits are the per-plan requests per minute it enforces against
	// the shared counters, as RateLimitsString writes them.
	RateLimits string
	SeenAt     time.Time
}

// Replicas say they are alive every ReplicaHeartbeat; one not heard of
// for ReplicaLive is taken as gone, and one not heard of for
// ReplicaForget is deleted.
const (
	ReplicaHeartbeat = 30 * time.Second
	ReplicaLive      = 2 * time.Minute
	ReplicaForget    = 24 * time.Hour
)

// RateLimitsString writes the limits a process enforces, the defaults
// (DefaultRateLimits) filled in, in plan order: "free=120,growth=600,...".
// Two processes enforce the same limits when their strings are equal.
func RateLimitsString(limits map[Plan]int) string {
	parts := make([]string, 0, len(Plans))
	for _, p := range Plans {
		n, ok := limits[p]
		if !ok {
			n = DefaultRateLimits[p]
		}
		parts = append(parts, string(p)+"="+strconv.Itoa(n))
	}
	return strings.Join(parts, ",")
}

// LimitsMismatchError is returned by JoinReplicas when live replicas
// enforce other rate limits than the one joining.
type LimitsMismatchError struct {
	Mine   string    // the joining process's limits
	Others []Replica // the live replicas whose limits differ
}

func (e *LimitsMismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rate limits %s differ from those of %d live replica(s) sharing the database:", e.Mine, len(e.Others))
	for _, r := range e.Others {
		fmt.Fprintf(&b, " %s enforces %s (seen %s);", r.ID, r.RateLimits, r.SeenAt.UTC().Format(time.RFC3339))
	}
	b.WriteString(" every replica counts against the same per-minute counters, so all must enforce the same limits")
	return b.String()
}

// JoinReplicas records the process id, enforcing limits, as a live
// replica, and returns a *LimitsMismatchError naming the live replicas
// (seen within ReplicaLive) that enforce other limits; the process is
// recorded either way, so the others see it.
func (s *Service) JoinReplicas(ctx context.Context, id, limits string) error {
	now := s.Now()
	if err := s.store.PutReplica(ctx, Replica{ID: id, RateLimits: limits, SeenAt: now}); err != nil {
		return fmt.Errorf("record replica: %w", err)
	}
	live, err := s.store.Replicas(ctx, now.Add(-ReplicaLive))
	if err != nil {
		return fmt.Errorf("list replicas: %w", err)
	}
	var other []Replica
	for _, r := range live {
		if r.ID != id && r.RateLimits != limits {
			other = append(other, r)
		}
	}
	if len(other) > 0 {
		return &LimitsMismatchError{Mine: limits, Others: other}
	}
	return nil
}

// LeaveReplicas records the process id as gone (last seen long ago), so
// that a successor with other limits need not wait ReplicaLive; it is
// deleted with the next replica's put after ReplicaForget.
func (s *Service) LeaveReplicas(ctx context.Context, id, limits string) error {
	gone := s.Now().Add(-ReplicaForget + time.Minute)
	if err := s.store.PutReplica(ctx, Replica{ID: id, RateLimits: limits, SeenAt: gone}); err != nil {
		return fmt.Errorf("record replica: %w", err)
	}
	return nil
}
