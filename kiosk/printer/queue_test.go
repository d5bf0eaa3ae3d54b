package printer_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-vms/svc/kiosk/badge"
	"github.com/svc-vms/svc/kiosk/printer"
	"github.com/svc-vms/svc/shared/fakeclock"
)

func badgePNG(t testing.TB, name string) []byte {
	t.Helper()
	data, err := badge.RenderPNG(badge.Badge{VisitorName: name, Token: "P1:TOKEN" + strings.ToUpper(name)})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func openQueue(t *testing.T, dir string, opt printer.QueueOptions) *printer.Queue {
	t.Helper()
	q, err := printer.OpenQueue(dir, opt)
	if err != nil {
		t.Fatalf("OpenQueue: %v", err)
	}
	return q
}

func TestQueue_NeverPrintsTwice(t *testing.T) {
	sim := startSimulator(t, "")
	q := openQueue(t, t.TempDir(), printer.QueueOptions{})
	ctx := t.Context()
	png := badgePNG(t, "Ana")

	j, err := q.Submit(ctx, "visit_a", sim.Addr(), badge.Continuous62, png)
	if err != nil || j.State != printer.JobPrinted || j.Attempts != 1 {
		t.Fatalf("Submit: %+v, %v; want printed on the first attempt", j, err)
	}
	j, err = q.Submit(ctx, "visit_a", sim.Addr(), badge.Continuous62, png)
	if err != nil || j.State != printer.JobPrinted || j.Attempts != 1 {
		t.Fatalf("Submit again: %+v, %v; want the same printed job", j, err)
	}
	j, err = q.Retry(ctx, "visit_a")
	if !errors.Is(err, printer.ErrAlreadyPrinted) || j.State != printer.JobPrinted {
		t.Fatalf("Retry of a printed job: %+v, %v; want ErrAlreadyPrinted", j, err)
	}
	if n := len(sim.Printed()); n != 1 {
		t.Fatalf("%d labels printed, want 1", n)
	}

	sim.SetFault(printer.FaultNoMedia)
	j, err = q.Submit(ctx, "visit_b", sim.Addr(), badge.Continuous62, badgePNG(t, "Bo"))
	if err != nil || j.State != printer.JobFailed || j.Reason != printer.NoMedia {
		t.Fatalf("Submit without labels: %+v, %v; want failed, no_media", j, err)
	}
	j, err = q.Retry(ctx, "visit_b")
	if err != nil || j.State != printer.JobFailed || j.Attempts != 2 {
		t.Fatalf("Retry without labels: %+v, %v", j, err)
	}
	sim.SetFault(printer.FaultNone)
	j, err = q.Retry(ctx, "visit_b")
	if err != nil || j.State != printer.JobPrinted || j.Reason != "" || j.Attempts != 3 {
		t.Fatalf("Retry with labels: %+v, %v; want printed", j, err)
	}
	if _, err := q.Retry(ctx, "visit_b"); !errors.Is(err, printer.ErrAlreadyPrinted) {
		t.Fatalf("second Retry: %v, want ErrAlreadyPrinted", err)
	}
	if n := len(sim.Printed()); n != 2 {
		t.Fatalf("%d labels printed, want 2", n)
	}
	if _, err := q.Retry(ctx, "visit_c"); !errors.Is(err, printer.ErrUnknownJob) {
		t.Errorf("Retry of an unknown job: %v, want ErrUnknownJob", err)
	}
}

func TestQueue_SurvivesReopen(t *testing.T) {
	sim := startSimulator(t, "")
	dir := t.TempDir()
	ctx := t.Context()
	png := badgePNG(t, "Ana")

	sim.SetFault(printer.FaultCoverOpen)
	q := openQueue(t, dir, printer.QueueOptions{})
	if j, err := q.Submit(ctx, "visit_a", sim.Addr(), badge.DieCut62x100, png); err != nil || j.State != printer.JobFailed {
		t.Fatalf("Submit with the cover open: %+v, %v", j, err)
	}

	q = openQueue(t, dir, printer.QueueOptions{})
	j, ok := q.Get("visit_a")
	if !ok || j.State != printer.JobFailed || j.Reason != printer.CoverOpen || j.Label != badge.DieCut62x100.Name || !bytes.Equal(j.PNG, png) {
		t.Fatalf("after reopening: %+v, %v; want the failed job with its PNG", j, ok)
	}
	sim.SetFault(printer.FaultNone)
	sim.Load(printer.MediaOf(badge.DieCut62x100))
	if j, err := q.Retry(ctx, "visit_a"); err != nil || j.State != printer.JobPrinted {
		t.Fatalf("Retry after reopening: %+v, %v", j, err)
	}

	q = openQueue(t, dir, printer.QueueOptions{})
	if _, err := q.Retry(ctx, "visit_a"); !errors.Is(err, printer.ErrAlreadyPrinted) {
		t.Fatalf("Retry after a second reopening: %v, want ErrAlreadyPrinted", err)
	}
	if n := len(sim.Printed()); n != 1 {
		t.Fatalf("%d labels printed, want 1", n)
	}
}

// TestQueue_StoppedWhilePrinting reopens the queue while a job is being
// sent, as after a power cut: the job is not resent on its own; it waits,
// failed as "may have printed", for a person to retry it.
func TestQueue_StoppedWhilePrinting(t *testing.T) {
	sim := startSimulator(t, "")
	dir := t.TempDir()
	started, release := make(chan struct{}), make(chan struct{})
	stuck := func(ctx context.Context, addr string, png []byte, label badge.Label) error {
		close(started)
		<-release
		return errors.New("never reached the printer")
	}
	q1 := openQueue(t, dir, printer.QueueOptions{Print: stuck})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = q1.Submit(context.Background(), "visit_a", sim.Addr(), badge.Continuous62, badgePNG(t, "Ana"))
	}()
	<-started

	q2 := openQueue(t, dir, printer.QueueOptions{})
	j, ok := q2.Get("visit_a")
	if !ok || j.State != printer.JobFailed || j.Reason != printer.MayHavePrinted {
		t.Fatalf("after the stop: %+v, %v; want failed, may_have_printed", j, ok)
	}
	if n := len(sim.Printed()); n != 0 {
		t.Fatalf("%d labels printed on reopening, want none", n)
	}
	close(release)
	<-done

	if j, err := q2.Retry(t.Context(), "visit_a"); err != nil || j.State != printer.JobPrinted {
		t.Fatalf("Retry: %+v, %v", j, err)
	}
	if n := len(sim.Printed()); n != 1 {
		t.Fatalf("%d labels printed, want 1", n)
	}
}

func TestQueue_CorruptFilesSkipped(t *testing.T) {
	dir := t.TempDir()
	sim := startSimulator(t, "")
	q := openQueue(t, dir, printer.QueueOptions{})
	if _, err := q.Submit(t.Context(), "visit_a", sim.Addr(), badge.Continuous62, badgePNG(t, "Ana")); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(dir, "visit_a.json"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"garbage.json":   []byte("{not json"),
		"other_id.json":  good, // holds visit_a
		"truncated.json": good[:len(good)/2],
		"huge.json":      bytes.Repeat([]byte(" "), printer.MaxJobBytes*2),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var logged bytes.Buffer
	q = openQueue(t, dir, printer.QueueOptions{Log: slog.New(slog.NewTextHandler(&logged, nil))})
	skipped := q.Skipped()
	slices.Sort(skipped)
	if want := []string{"garbage.json", "huge.json", "other_id.json", "truncated.json"}; !slices.Equal(skipped, want) {
		t.Errorf("Skipped() = %q, want %q", skipped, want)
	}
	if strings.Count(logged.String(), "cannot read") != len(files) {
		t.Errorf("log does not report each file:\n%s", logged.String())
	}
	if j, ok := q.Get("visit_a"); !ok || j.State != printer.JobPrinted {
		t.Errorf("the good job: %+v, %v", j, ok)
	}
	for name := range files {
		if _, err := os.Stat(filepath.Join(dir, name+".corrupt")); err != nil {
			t.Errorf("%s not set aside: %v", name, err)
		}
	}
	if q = openQueue(t, dir, printer.QueueOptions{}); len(q.Skipped()) != 0 {
		t.Errorf("set-aside files read again: %q", q.Skipped())
	}
}

func TestQueue_PrunesAfterAWeek(t *testing.T) {
	sim := startSimulator(t, "")
	dir := t.TempDir()
	clk := fakeclock.New(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	q := openQueue(t, dir, printer.QueueOptions{Now: clk.Now})
	ctx := t.Context()
	if _, err := q.Submit(ctx, "old", sim.Addr(), badge.Continuous62, badgePNG(t, "A")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * 24 * time.Hour)
	if _, err := q.Submit(ctx, "newer", sim.Addr(), badge.Continuous62, badgePNG(t, "B")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(6 * 24 * time.Hour) // "old" is 8 days old, "newer" 6
	if n := q.Prune(); n != 1 {
		t.Fatalf("Prune removed %d, want 1", n)
	}
	if _, ok := q.Get("old"); ok {
		t.Error("a job of 8 days is still held")
	}
	if _, err := os.Stat(filepath.Join(dir, "old.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("its file: %v, want removed", err)
	}
	if got := q.List(); len(got) != 1 || got[0].ID != "newer" || got[0].PNG != nil {
		t.Errorf("List() = %+v, want the newer job without its PNG", got)
	}
}

func TestQueue_Limits(t *testing.T) {
	png := badgePNG(t, "A")
	q := openQueue(t, t.TempDir(), printer.QueueOptions{
		MaxBytes: 2*len(png) + 1,
		Print:    func(context.Context, string, []byte, badge.Label) error { return nil },
	})
	ctx := t.Context()
	for name, tc := range map[string]struct {
		id, addr string
		label    badge.Label
		png      []byte
	}{
		"path in ID":    {"../etc/x", "p:9100", badge.Continuous62, png},
		"empty ID":      {"", "p:9100", badge.Continuous62, png},
		"no printer":    {"a", "", badge.Continuous62, png},
		"unknown label": {"a", "p:9100", badge.Label{Name: "29"}, png},
		"no PNG":        {"a", "p:9100", badge.Continuous62, nil},
		"PNG too large": {"a", "p:9100", badge.Continuous62, make([]byte, printer.MaxJobBytes+1)},
	} {
		if _, err := q.Submit(ctx, tc.id, tc.addr, tc.label, tc.png); !errors.Is(err, printer.ErrInvalidJob) {
			t.Errorf("%s: Submit: %v, want ErrInvalidJob", name, err)
		}
	}
	for _, id := range []string{"a", "b"} {
		if _, err := q.Submit(ctx, id, "p:9100", badge.Continuous62, png); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.Submit(ctx, "c", "p:9100", badge.Continuous62, png); !errors.Is(err, printer.ErrQueueFull) {
		t.Errorf("Submit past MaxBytes: %v, want ErrQueueFull", err)
	}
}
