package cache_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/sync/protocol"
)

// mappedKiB is how much of the file at path this process has resident
// through its maps, from /proc/self/smaps.
func mappedKiB(tb testing.TB, path string) int {
	tb.Helper()
	f, err := os.Open("/proc/self/smaps")
	require.NoError(tb, err)
	defer f.Close()
	total, in, found := 0, false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) > 0 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":"):
			in = len(fields) >= 6 && fields[len(fields)-1] == path
			found = found || in
		case in && fields[0] == "Rss:":
			n, err := strconv.Atoi(fields[1])
			require.NoError(tb, err)
			total += n
		}
	}
	require.NoError(tb, sc.Err())
	require.True(tb, found, "%s is not mapped", path)
	return total
}

// Open reads every page of the file, and a snapshot or a batch of changes
// many; none of them stays resident after, since the gate path reads the
// View, not the file.
func TestOpen_FilePagesNotResident(t *testing.T) {
	path, visits := fill(t, 20_000)
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Greater(t, st.Size(), int64(2<<20))
	const most = 64 // KiB: the meta pages and a path through the tree

	c := openCache(t, path)
	require.LessOrEqual(t, mappedKiB(t, path), most, "after Open")

	var batch []any
	for i := 0; i < len(visits); i += 40 {
		v := visits[i]
		v.HostName = "Someone Else"
		batch = append(batch, v)
	}
	apply(t, c, 2, batch...)
	require.LessOrEqual(t, mappedKiB(t, path), most, "after Apply")

	settings := protocol.Settings{Timezone: "UTC", OfflineLimitMinutes: 60}
	require.NoError(t, c.ReplaceSnapshot(snapshot(9, protocol.MaxSnapshot, &settings, nil, nil, visits)))
	require.LessOrEqual(t, mappedKiB(t, path), most, "after ReplaceSnapshot")
}
