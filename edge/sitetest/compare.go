package sitetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/svc-vms/svc/edge/cache"
	"github.com/svc-vms/svc/sync/protocol"
)

// CacheDiff compares an edge's cache with the cloud's snapshot of Site
// now: the same sequence, settings, gates, keys, people and visits, each
// visit as the cloud would send it. It returns the first difference, or "" when
// there is none. A cache that was never synced (its sync time is not
// written yet) differs.
func (w *World) CacheDiff(t testing.TB, v *cache.View) string {
	t.Helper()
	snap, err := w.Svc().SiteSnapshot(context.Background(), w.Site)
	must(t, err)
	if v.SyncedAt().IsZero() {
		return "the cache has never been synced"
	}
	if v.Seq() != snap.Seq {
		return fmt.Sprintf("the cache is at sequence %d, the cloud's feed at %d", v.Seq(), snap.Seq)
	}
	if s, ok := v.Settings(); !ok || s != snap.Settings {
		return fmt.Sprintf("settings: the cache has %+v (%v), the cloud %+v", s, ok, snap.Settings)
	}
	counts := v.Counts()
	if counts.Gates != len(snap.Gates) {
		return fmt.Sprintf("the cache has %d gates, the cloud %d", counts.Gates, len(snap.Gates))
	}
	for _, g := range snap.Gates {
		if got, ok := v.Gate(g.ID); !ok || got != g {
			return fmt.Sprintf("gate %s: the cache has %+v (%v), the cloud %+v", g.ID, got, ok, g)
		}
	}
	keys, badges := v.Keys(), v.BadgeKeysAt(w.Site.SiteID, time.Now())
	if len(keys)+len(badges) != len(snap.Keys) {
		return fmt.Sprintf("the cache has %d keys and %d badge keys, the cloud %d in all", len(keys), len(badges), len(snap.Keys))
	}
	for _, k := range snap.Keys {
		set := keys
		if k.Kind == protocol.KeyBadge {
			set = badges
		}
		if !bytes.Equal(set[k.ID], k.Public) {
			return fmt.Sprintf("key %s (kind %q) differs or is missing", k.ID, k.Kind)
		}
	}
	if counts.People != len(snap.People) {
		return fmt.Sprintf("the cache has %d people, the cloud %d", counts.People, len(snap.People))
	}
	for _, want := range snap.People {
		if got, ok := v.Person(want.ID); !ok || got != want {
			return fmt.Sprintf("person %s: the cache has %+v (%v), the cloud %+v", want.ID, got, ok, want)
		}
	}
	if counts.Visits != len(snap.Visits) {
		return fmt.Sprintf("the cache has %d visits, the cloud's snapshot %d", counts.Visits, len(snap.Visits))
	}
	for _, want := range snap.Visits {
		got, ok := v.Visit(want.ID)
		if !ok {
			return fmt.Sprintf("visit %s is not in the cache", want.ID)
		}
		if g, w := visitJSON(got), visitJSON(want); g != w {
			return fmt.Sprintf("visit %s:\n  cache %s\n  cloud %s", want.ID, g, w)
		}
	}
	return ""
}

// visitJSON is a visit in a form where equal visits are equal strings:
// times in UTC to the microsecond, gate_ids never null.
func visitJSON(v protocol.Visit) string {
	for _, p := range []**time.Time{&v.ExpectedAt, &v.ExpectedUntil, &v.CheckedInAt, &v.CheckedOutAt} {
		if *p != nil {
			t := (*p).UTC().Truncate(time.Microsecond)
			*p = &t
		}
	}
	if v.Rules.GateIDs == nil {
		v.Rules.GateIDs = []string{}
	}
	b, _ := json.Marshal(v) // a visit always marshals
	return string(b)
}

// WaitConverged polls until the running edge's cache equals the cloud's
// snapshot (CacheDiff), and fails t with the last difference when timeout
// passes first.
func (w *World) WaitConverged(t testing.TB, e *Edge, timeout time.Duration) {
	t.Helper()
	var diff string
	Eventually(t, timeout, func() bool {
		diff = w.CacheDiff(t, e.View())
		return diff == ""
	}, "the edge's cache did not converge with the cloud: %s", &lastDiff{&diff})
}

// lastDiff prints the difference as it was when the wait gave up.
type lastDiff struct{ s *string }

func (d *lastDiff) String() string { return *d.s }
