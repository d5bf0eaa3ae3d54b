package edge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/sync/protocol"
)

// smallDisk mounts a tmpfs of size bytes in a temp dir and returns it; the
// test is skipped where mounting is not allowed (not root), and fails in
// CI (SVC_TEST_REQUIRE_SERVICES=1), which runs as root.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0700", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("SVC_TEST_REQUIRE_SERVICES") == "1" {
			t.Fatalf("mount a tmpfs for the full-disk test: %v: %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs here (%v: %s); the full-disk test needs root", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file in dir until the file system is full, and
// returns a function that frees the space again.
func fillDisk(t *testing.T, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			require.True(t, errors.Is(err, syscall.ENOSPC), "filling the disk: %v", err)
			break
		}
	}
	for { // the last partial block
		if _, err := f.Write(chunk[:512]); err != nil {
			break
		}
	}
	return func() { require.NoError(t, os.Remove(path)) }
}

// With the cache on a full disk, nothing opens unrecorded: every admit
// whose fact cannot be made durable is refused record_failed with no
// pulse, a single-use pass scanned five times opens at most once,
// /healthz and the metrics say the cache does not take writes, and once
// the disk has room again the gate works and the edge is healthy. Every
// pulse of the relay has its fact in the file afterwards.
func TestApp_FullDiskOpensNothingUnrecorded(t *testing.T) {
	s := newSite(t)
	disk := smallDisk(t, 8<<20)
	s.cfg.CachePath = filepath.Join(disk, "cache.db")
	// More visits than records the cache's journal takes before it writes
	// them to the file (1024, edge/cache flushEvery): the journal's space
	// is reserved, so records fail only once that write needs a block.
	for range 1200 {
		s.visits = append(s.visits, s.newVisit())
	}
	s.visits[0].Rules.SingleUse = true
	s.start()

	scan := func(token string) edge.ScanResponse {
		t.Helper()
		_, text := s.post("/gates/"+s.entry+"/scan", "text/plain", strings.NewReader(token))
		var out edge.ScanResponse
		require.NoError(t, json.Unmarshal([]byte(text), &out), text)
		return out
	}
	free := fillDisk(t, disk)

	// Visitors arrive until a record fails: writes that reuse the file's
	// free pages still commit on a full disk; the first that needs a new
	// block does not.
	failed := false
	admits := 0
	for _, v := range s.visits[1:] {
		res := scan(s.token(v))
		if res.Reason == protocol.ReasonRecordFailed {
			require.False(t, res.Admitted)
			require.Empty(t, res.FactID)
			require.NotEmpty(t, res.Error)
			failed = true
			break
		}
		require.True(t, res.Admitted, "%+v", res)
		admits++
	}
	require.True(t, failed, "the full disk never refused a record")

	resp, body := s.get("/healthz")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	require.Contains(t, body, "cache writes failing")
	samples, _ := s.metrics()
	require.Equal(t, 1.0, samples["svc_edge_cache_write_failing"])

	single := s.token(s.visits[0])
	for range 5 {
		res := scan(single)
		require.False(t, res.Admitted, "%+v", res)
		require.Equal(t, protocol.ReasonRecordFailed, res.Reason)
	}
	require.Equal(t, admits, s.pulses("GPIO17"), "no pulse without its record")

	free()
	res := scan(single)
	require.True(t, res.Admitted, "%+v", res)
	require.NotEmpty(t, res.FactID)
	admits++
	require.False(t, scan(single).Admitted, "the single-use pass opened once")
	resp, body = s.get("/healthz")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	eventually(t, func() bool { return s.pulses("GPIO17") == admits }, "the relay did not pulse for the last admit")

	opened := 0
	for _, f := range s.outboxAfterStop() {
		if f.Kind == protocol.FactCheckIn {
			opened++
		}
	}
	require.Equal(t, admits, opened, "every opening has its fact in the file")
}
