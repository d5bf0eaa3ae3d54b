package cloud

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// This file sends waiting reminders: a visitor checked in and waiting for
// someone past their site's wait limit is the subject of one notice to
// whoever they wait with (docs/decisions.md, "Waiting reminders").

// WaitReminderHorizon is how far back a wait may have begun and still be
// reminded of: a visit "waiting" for longer is one whose visitor left
// without checking out, and a reminder about it is noise (as it would be
// for every such visit on the first run after an upgrade).
const WaitReminderHorizon = 12 * time.Hour

// DefaultWaitReminderInterval is how often WaitReminders looks for waits
// due: a reminder goes out at most this long after the limit.
const DefaultWaitReminderInterval = 30 * time.Second

// waitReminderBatch is how many waits one OverdueWaits call returns.
const waitReminderBatch = 100

// OverdueWait is a visit whose visitor has waited past their site's limit
// with no reminder for this wait (Store.OverdueWaits).
type OverdueWait struct {
	Tenant  Tenant
	VisitID string
	// Since is the visit's RemindFrom: when the wait began.
	Since time.Time
	// SiteName and WaitLimitMinutes are the site's (Site.WaitLimit).
	SiteName         string
	WaitLimitMinutes int
}

// errNotDue aborts a reminder's UpdateVisit: since OverdueWaits read it,
// the visit was taken, handed over, checked out or reminded (by another
// process).
var errNotDue = errors.New("waiting reminder no longer due")

// RemindWaiting sends one reminder for each wait past its site's limit,
// begun within WaitReminderHorizon, that has had none, and returns how
// many it sent. Each is an UpdateVisit that checks again, under the
// visit's lock, that the reminder is due and marks it sent
// (Visit.RemindedFor) with the notices in the same transaction: so any
// number of processes may run it at once and each wait is reminded once.
// A visit that fails does not stop the others; their errors are joined.
func (s *Service) RemindWaiting(ctx context.Context) (int, error) {
	now := s.Now()
	sent := 0
	for {
		due, err := s.store.OverdueWaits(ctx, now.Add(-WaitReminderHorizon), now, waitReminderBatch)
		if err != nil {
			return sent, fmt.Errorf("overdue waits: %w", err)
		}
		var errs []error
		for _, d := range due {
			ok, err := s.remindWait(ctx, d, now)
			if err != nil {
				errs = append(errs, fmt.Errorf("remind of visit %s: %w", d.VisitID, err))
			}
			if ok {
				sent++
			}
		}
		// A full batch without errors may be followed by more; the ones
		// sent (or found not due) no longer match, so the next read moves
		// on. With errors, the loop's next round retries.
		if len(due) < waitReminderBatch || len(errs) > 0 {
			return sent, errors.Join(errs...)
		}
	}
}

// remindWait sends the reminder of one wait, unless it is no longer due
// at now; it reports whether it sent it.
func (s *Service) remindWait(ctx context.Context, d OverdueWait, now time.Time) (bool, error) {
	limit := time.Duration(d.WaitLimitMinutes) * time.Minute
	_, err := s.store.UpdateVisit(ctx, d.Tenant, d.VisitID, func(v *Visit, w *VisitWrites) error {
		start := RemindFrom(*v)
		if start == nil || now.Sub(*start) < limit {
			return errNotDue
		}
		waited := "1 minute"
		if m := int(now.Sub(*start) / time.Minute); m != 1 {
			waited = fmt.Sprintf("%d minutes", m)
		}
		notices, err := s.tellReceivers(ctx, *v, "A visitor is still waiting",
			fmt.Sprintf("%s has been waiting at %s for %s and nobody has taken the visit yet.",
				visitorName(v.Visitor), d.SiteName, waited), now)
		if err != nil {
			return err
		}
		w.Messages = append(w.Messages, notices...)
		// Not UpdatedAt: nothing the API shows of the visit changes.
		v.RemindedFor = start
		return nil
	})
	switch {
	case errors.Is(err, errNotDue):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// WaitReminders runs Service.RemindWaiting every Interval until its
// context ends. Every replica of the cloud may run one: RemindWaiting
// sends each reminder once however many run.
type WaitReminders struct {
	Service  *Service
	Interval time.Duration // DefaultWaitReminderInterval when 0
	Log      *slog.Logger  // slog.Default() when nil
}

// Run sends reminders until ctx ends, then returns nil. A round that
// fails is logged and the next one tries again.
func (r *WaitReminders) Run(ctx context.Context) error {
	return every(ctx, r.Interval, DefaultWaitReminderInterval, r.Log, "waiting reminders", "sent waiting reminders", r.Service.RemindWaiting)
}
