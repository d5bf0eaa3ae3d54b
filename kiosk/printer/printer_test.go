package printer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/svc-vms/svc/kiosk/badge"
	"github.com/svc-vms/svc/kiosk/printer"
)

// startSimulator runs a simulated printer on a free port until the test
// ends.
func startSimulator(t *testing.T, dir string) *printer.Simulator {
	t.Helper()
	sim, err := printer.ListenSimulator("127.0.0.1:0", dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("simulator Run: %v", err)
		}
	})
	return sim
}

// badgeFor renders a badge for the label.
func badgeFor(t testing.TB, label badge.Label, name string) *image.Paletted {
	t.Helper()
	img, err := badge.Render(badge.Badge{
		VisitorName: name, Company: "Acme", Host: "Reception", VisitType: "Visitor",
		Date: "2026-11-21", Token: "P1:TESTTOKEN" + strings.ToUpper(name), SiteName: "Demo site", Label: label,
	})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// samePixels reports whether two 1-bit images print the same dots.
func samePixels(a, b *image.Paletted) error {
	if a.Rect != b.Rect {
		return fmt.Errorf("size %v, want %v", b.Rect, a.Rect)
	}
	for y := a.Rect.Min.Y; y < a.Rect.Max.Y; y++ {
		for x := a.Rect.Min.X; x < a.Rect.Max.X; x++ {
			if a.ColorIndexAt(x, y) != b.ColorIndexAt(x, y) {
				return fmt.Errorf("dot (%d,%d) differs", x, y)
			}
		}
	}
	return nil
}

func TestPrint_RoundTripThroughSimulator(t *testing.T) {
	for _, label := range badge.Labels {
		for _, compress := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/compression=%v", label.Name, compress), func(t *testing.T) {
				dir := t.TempDir()
				sim := startSimulator(t, dir)
				sim.Load(printer.MediaOf(label))
				img := badgeFor(t, label, "Ana Lima")
				c := printer.Client{Options: printer.Options{NoCompression: !compress}}
				if err := c.Print(t.Context(), sim.Addr(), img, label); err != nil {
					t.Fatalf("Print: %v", err)
				}
				got := sim.Printed()
				if len(got) != 1 {
					t.Fatalf("%d labels printed, want 1", len(got))
				}
				if got[0].Label != label {
					t.Errorf("printed on %v, want %v", got[0].Label, label)
				}
				if err := samePixels(img, got[0].Image); err != nil {
					t.Errorf("printed image: %v", err)
				}
				data, err := os.ReadFile(got[0].Path)
				if err != nil {
					t.Fatalf("the printed label's PNG: %v", err)
				}
				file, err := png.Decode(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				if err := samePixels(img, file.(*image.Paletted)); err != nil {
					t.Errorf("printed PNG: %v", err)
				}
			})
		}
	}
}

func TestPrint_StatusErrors(t *testing.T) {
	img := badgeFor(t, badge.Continuous62, "Ana Lima")
	for name, tc := range map[string]struct {
		fault  printer.Fault
		media  printer.Media
		client printer.Client
		want   error
		reason printer.Reason
	}{
		"out of labels":    {fault: printer.FaultNoMedia, want: printer.ErrNoMedia, reason: printer.NoMedia},
		"cover open":       {fault: printer.FaultCoverOpen, want: printer.ErrCoverOpen, reason: printer.CoverOpen},
		"29 mm roll":       {media: printer.Media{Continuous: true, WidthMM: 29}, want: printer.ErrWrongMedia, reason: printer.WrongMedia},
		"die-cut loaded":   {media: printer.MediaOf(badge.DieCut62x100), want: printer.ErrWrongMedia, reason: printer.WrongMedia},
		"dropped":          {fault: printer.FaultDrop, want: printer.ErrInterrupted, reason: printer.Interrupted},
		"silent":           {fault: printer.FaultSilent, client: printer.Client{Timeout: 300 * time.Millisecond}, want: printer.ErrTimedOut, reason: printer.TimedOut},
		"nothing answered": {want: printer.ErrUnreachable, reason: printer.Unreachable},
	} {
		t.Run(name, func(t *testing.T) {
			sim := startSimulator(t, "")
			sim.SetFault(tc.fault)
			if tc.media != (printer.Media{}) {
				sim.Load(tc.media)
			}
			addr := sim.Addr()
			if name == "nothing answered" {
				addr = closedPort(t)
			}
			err := tc.client.Print(t.Context(), addr, img, badge.Continuous62)
			if !errors.Is(err, tc.want) || printer.ReasonOf(err) != tc.reason {
				t.Fatalf("Print: %v (reason %q), want %v", err, printer.ReasonOf(err), tc.want)
			}
			if !strings.Contains(err.Error(), addr) {
				t.Errorf("%q does not name the printer %s", err, addr)
			}
			if n := len(sim.Printed()); n != 0 {
				t.Errorf("%d labels printed, want none", n)
			}
		})
	}
}

// closedPort returns an address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestPrint_WrongMediaErrorSaysWhat shows the detail the kiosk can show
// beside its own words.
func TestPrint_WrongMediaErrorSaysWhat(t *testing.T) {
	sim := startSimulator(t, "")
	sim.Load(printer.Media{Continuous: true, WidthMM: 29})
	err := printer.Print(t.Context(), sim.Addr(), badgeFor(t, badge.Continuous62, "A"), badge.Continuous62)
	if want := "29 mm continuous loaded, 62 mm continuous needed"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Print: %v, want it to say %q", err, want)
	}
}

func TestEncode_RejectsWrongSize(t *testing.T) {
	for name, tc := range map[string]struct {
		label badge.Label
		w, h  int
	}{
		"too wide":            {badge.Continuous62, 720, 1109},
		"die-cut too long":    {badge.DieCut62x100, 696, 1110},
		"continuous too long": {badge.Continuous62, 696, printer.MaxLines + 1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := printer.Encode(image.NewGray(image.Rect(0, 0, tc.w, tc.h)), tc.label, printer.Options{})
			if !errors.Is(err, printer.ErrImageSize) {
				t.Errorf("Encode: %v, want ErrImageSize", err)
			}
		})
	}
}
