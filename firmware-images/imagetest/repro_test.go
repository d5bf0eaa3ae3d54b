package imagetest

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// reproducible builds the qemu image a second time, from the same tree,
// version and release key as a, into dir, and wants the same bytes: the
// root file system (the rootfs release, whose SHA-256 the signed manifest
// carries), the boot partition and the whole disk image. It guards
// mkimage.sh's pinning of every time and random ID (SOURCE_DATE_EPOCH on
// the tree, E2FSPROGS_FAKE_TIME and fixed UUIDs for the data partition's
// template, mksquashfs -reproducible, mkfs.vfat --invariant, gzip -n) and
// go build's -trimpath. TestImage_EnrolsAdmitsUpdatesAndRollsBack calls
// it with its image 1.0.0, so that one build is new: a build took 42–63 s
// on this busy 2-core machine (20 s of CPU). The two builds share the Go
// build cache, as a developer's would (a cold cache costs a minute more
// of CPU; docs/performance.md, "Reproducible builds", did that by hand).
func reproducible(t *testing.T, a built, dir, version, pub string) {
	t.Helper()
	b := buildImage(t, dir, version, pub)
	for _, f := range []struct{ name, a, b string }{
		{"root file system (qemu/root.sqfs)", a.root, b.root},
		{"boot partition (qemu/boot.img)", filepath.Join(filepath.Dir(a.root), "boot.img"), filepath.Join(filepath.Dir(b.root), "boot.img")},
		{"disk image (svc-qemu.img)", a.image, b.image},
	} {
		ha, hb := sha256File(t, f.a), sha256File(t, f.b)
		if ha != hb {
			t.Errorf("two builds of the same tree differ in the %s: SHA-256 %s and %s", f.name, ha, hb)
		} else {
			t.Logf("%s: SHA-256 %s, both builds", f.name, ha)
		}
	}
}

func sha256File(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
