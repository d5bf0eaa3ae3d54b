package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
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
	before := s.Stats().WAL.Checkpoints
	for range 50 {
		v, w := visit()
		require.NoError(t, s.CreateVisit(ctx, v, w))
	}
	var wal *cloud.WALStats
	require.True(t, poll.Until(10*time.Second, 20*time.Millisecond, func() bool {
		wal = s.Stats().WAL
		return wal.Checkpoints > before && wal.Frames > 0 && wal.Uncopied == 0
	}), "no checkpoint copied the WAL: %+v", wal)
	require.Zero(t, wal.Failed)
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
