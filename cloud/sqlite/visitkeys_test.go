package sqlite

import (
	"testing"
	"time"

	"github.com/svc-vms/svc/cloud"
)

// TestVisitKeys_Changed holds updateVisitRow to every indexed column: a
// change of any one of them must put its group in the UPDATE, and no
// change none.
func TestVisitKeys_Changed(t *testing.T) {
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	later := at.Add(time.Hour)
	base := cloud.Visit{ID: "vis_1", Status: cloud.VisitExpected, Type: "meeting", SiteID: "sit_1", HostID: "per_1",
		VisitorID: "vtr_1", BookingID: "bkg_1", ExpectedAt: &at, ExpectedUntil: &later}
	tests := []struct {
		name string
		edit func(*cloud.Visit)
		want int
	}{
		{"nothing", func(*cloud.Visit) {}, 0},
		{"status", func(v *cloud.Visit) { v.Status = cloud.VisitCheckedIn }, colStatus},
		{"type", func(v *cloud.Visit) { v.Type = "interview" }, colPlace},
		{"site", func(v *cloud.Visit) { v.SiteID = "sit_2" }, colPlace},
		{"host", func(v *cloud.Visit) { v.HostID = "" }, colPlace},
		{"visitor", func(v *cloud.Visit) { v.VisitorID = "vtr_2" }, colPlace},
		{"booking", func(v *cloud.Visit) { v.BookingID = "" }, colPlace},
		{"expected_at", func(v *cloud.Visit) { v.ExpectedAt = &later }, colPlace},
		{"edge_until", func(v *cloud.Visit) { v.ExpectedUntil = nil }, colEdgeUntil},
		{"remind_from", func(v *cloud.Visit) { v.Status, v.NeedsSomeone, v.WaitingSince = cloud.VisitCheckedIn, true, &at }, colStatus | colRemindFrom},
		{"check-in", func(v *cloud.Visit) { v.Status, v.CheckedInAt, v.UpdatedAt = cloud.VisitCheckedIn, &at, at }, colStatus},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := base
			tc.edit(&v)
			if got := keysOf(v).changed(keysOf(base)); got != tc.want {
				t.Errorf("changed = %04b, want %04b", got, tc.want)
			}
		})
	}
}
