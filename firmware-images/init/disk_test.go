package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSiblingPartition finds partition n among a disk's sysfs entries,
// whatever the naming (vda2, mmcblk0p2), and says so when there is none.
func TestSiblingPartition(t *testing.T) {
	for _, disk := range []string{"vda", "mmcblk0"} {
		dir := filepath.Join(t.TempDir(), disk)
		sep := ""
		if disk == "mmcblk0" {
			sep = "p"
		}
		for _, sub := range []string{"queue", "holders"} {
			if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, n := range []string{"1", "2", "3"} {
			part := filepath.Join(dir, disk+sep+n)
			if err := os.MkdirAll(part, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(part, "partition"), []byte(n+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := siblingPartition(dir, 3)
		if want := "/dev/" + disk + sep + "3"; err != nil || got != want {
			t.Errorf("%s: partition 3 = %q, %v; want %s", disk, got, err, want)
		}
		if got, err := siblingPartition(dir, 4); err == nil {
			t.Errorf("%s: partition 4 = %q, want an error", disk, got)
		}
	}
}
