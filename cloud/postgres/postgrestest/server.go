package postgrestest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"

	"github.com/svc-vms/svc/shared/freeport"
)

// Server is a private PostgreSQL server of one test, which the test may
// stop and start (an outage, a restart) without touching the shared one
// other tests use.
type Server struct {
	t     testing.TB
	bin   string // the directory of initdb and pg_ctl
	dir   string // data directory's parent: logs, the socket
	data  string
	port  int
	cred  *syscall.Credential
	URL   string // postgres://postgres@127.0.0.1:port/postgres?sslmode=disable
	start []string
}

// NewServer initialises a cluster in a directory of its own and starts it
// on a free port. Like URL, it skips t when SVC_TEST_POSTGRES_URL is
// unset; it skips too when the PostgreSQL server binaries
// (/usr/lib/postgresql/*/bin) are missing, unless
// SVC_TEST_REQUIRE_SERVICES=1, which makes that a failure. Run as root,
// the server runs as the postgres user. It is stopped when the test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	URL(t)
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(bins) == 0 {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatal("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin, and " + EnvRequire + "=1")
		}
		t.Skip("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin")
	}
	sort.Strings(bins)
	s := &Server{t: t, bin: filepath.Dir(bins[len(bins)-1])}

	// Not t.TempDir(): its parent is private to root, and the server
	// runs as postgres.
	dir, err := os.MkdirTemp("", "svc-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s.dir, s.data = dir, filepath.Join(dir, "data")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs a postgres user to run the server: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	s.port = freeport.Port(t)
	s.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
	s.run("initdb", "-D", s.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	s.start = []string{"-D", s.data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", s.port, dir), "start"}
	s.Start()
	t.Cleanup(func() { s.ctl("-D", s.data, "-m", "immediate", "-w", "stop") })
	return s
}

// Start starts the server and waits until it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	s.run("pg_ctl", s.start...)
}

// Stop shuts the server down (fast: open sessions are ended with
// admin_shutdown) and waits until it has stopped.
func (s *Server) Stop() {
	s.t.Helper()
	s.run("pg_ctl", "-D", s.data, "-m", "fast", "-w", "-t", "60", "stop")
}

func (s *Server) run(name string, args ...string) {
	s.t.Helper()
	if out, err := s.cmd(name, args...).CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		s.t.Fatalf("%s %v: %v\n%s\nserver log:\n%s", name, args, err, out, log)
	}
}

// ctl runs pg_ctl ignoring its outcome (cleanup).
func (s *Server) ctl(args ...string) { _ = s.cmd("pg_ctl", args...).Run() }

func (s *Server) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Stdin = bytes.NewReader(nil)
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd
}
