// Package zbartest reads QR codes back with Debian's zbarimg (zbar-tools),
// a decoder independent of the project's, for the tests that check a pass
// or a badge reads as exactly its token. make test finds zbarimg on PATH
// and sets SVC_TEST_ZBARIMG; without it the test is skipped, or fails when
// SVC_TEST_REQUIRE_SERVICES=1 (CI).
//
// It may import only the standard library.
package zbartest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Read returns the text zbarimg reads from the image data (PNG or JPEG).
func Read(t testing.TB, data []byte) string {
	t.Helper()
	bin := os.Getenv("SVC_TEST_ZBARIMG")
	if bin == "" {
		if os.Getenv("SVC_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatal("SVC_TEST_ZBARIMG is not set: install zbar-tools (make test finds it on PATH)")
		}
		t.Skip("SVC_TEST_ZBARIMG is not set")
	}
	path := filepath.Join(t.TempDir(), "code.png")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), bin, "--quiet", "--raw", path).Output()
	if err != nil {
		t.Fatalf("zbarimg: %v", err)
	}
	return strings.TrimSuffix(string(out), "\n")
}
