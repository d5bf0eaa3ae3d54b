package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/shared/poll"
)

// TestCheckpointer_CopiesTheWAL: once the writer has committed, the
// checkpointer copies the WAL's frames into the database file, on its
// own connection, with no call of the Store asking for it.
func TestCheckpointer_CopiesTheWAL(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "cloud.db"), kektest.Ring())
	require.NoError(t, err)
	defer s.Close()
	_, _, visit := siteVisits(t, s)
	before := s.ckpt.runs.Load()
	for range 50 {
		v, w := visit()
		require.NoError(t, s.CreateVisit(ctx, v, w))
	}
	require.True(t, poll.Until(10*time.Second, 20*time.Millisecond, func() bool {
		return s.ckpt.runs.Load() > before && s.ckpt.log.Load() > 0 && s.ckpt.left.Load() == 0
	}), "no checkpoint copied the WAL: runs %d, log %d, left %d, failed %d",
		s.ckpt.runs.Load(), s.ckpt.log.Load(), s.ckpt.left.Load(), s.ckpt.failed.Load())
	require.Zero(t, s.ckpt.failed.Load())
}

// TestWriter_LeavesCheckpointsToTheCheckpointer: the writer's commits
// make a checkpoint only past writerAutoCheckpoint pages, not SQLite's
// default 1000: below it, the checkpointer makes them.
func TestWriter_LeavesCheckpointsToTheCheckpointer(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "cloud.db"), kektest.Ring())
	require.NoError(t, err)
	defer s.Close()
	var pages int
	require.NoError(t, s.w.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&pages))
	require.Equal(t, writerAutoCheckpoint, pages)
}
