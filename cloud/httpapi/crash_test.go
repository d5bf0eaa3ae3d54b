package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/cloud/httpapi"
	"github.com/svc-vms/svc/cloud/kek/kektest"
	"github.com/svc-vms/svc/cloud/postgres/postgrestest"
	"github.com/svc-vms/svc/cloud/sqlite"
)

// The crash test's child process: TestHelperProcess serves the API on a
// free port over the store the environment names and, when
// crashFailpoint is set, kills itself with SIGKILL the first time an
// idempotent request reaches that failpoint (cloud.Fail).
const (
	crashChild     = "SVC_CRASH_CHILD"     // 1 in the child
	crashStore     = "SVC_CRASH_STORE"     // sqlite or postgres
	crashSQLite    = "SVC_CRASH_SQLITE"    // the SQLite file
	crashPGURL     = "SVC_CRASH_PG_URL"    // the PostgreSQL URL
	crashPGSchema  = "SVC_CRASH_PG_SCHEMA" // and schema
	crashFailpoint = "SVC_CRASH_FAILPOINT" // one of cloud's Fail* names, or empty
)

// TestHelperProcess is not a test: it is the child process of
// TestIdempotency_CrashAtEveryStep, and does nothing otherwise.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(crashChild) != "1" {
		t.Skip("the crash test's child process")
	}
	ctx := context.Background()
	var store cloud.Store
	var err error
	switch os.Getenv(crashStore) {
	case "sqlite":
		store, err = sqlite.Open(ctx, os.Getenv(crashSQLite), kektest.Ring())
	case "postgres":
		store, err = postgrestest.OpenIn(t, os.Getenv(crashPGURL), os.Getenv(crashPGSchema))
	default:
		err = fmt.Errorf("%s=%q", crashStore, os.Getenv(crashStore))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	api, err := httpapi.New(ctx, httpapi.Config{Service: cloud.NewService(store, time.Now)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	if fp := os.Getenv(crashFailpoint); fp != "" {
		cloud.Failpoint = func(ctx context.Context, name string) {
			if name != fp || cloud.RequestID(ctx) == "" {
				return
			}
			// At a commit, only the write that carries the response.
			if (name == cloud.FailBeforeCommit || name == cloud.FailAfterCommit) && cloud.TakeReply(ctx) == nil {
				return
			}
			{
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	fmt.Printf("LISTEN %s\n", ln.Addr())
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	_ = srv.Serve(ln)
	os.Exit(0)
}

// child is a running TestHelperProcess.
type child struct {
	cmd  *exec.Cmd
	url  string
	done chan error
}

// startChild starts a child serving the store env names, stopping at
// failpoint (none when empty), and waits for its address.
func startChild(t *testing.T, env []string, failpoint string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), env...), crashChild+"=1", crashFailpoint+"="+failpoint)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &child{cmd: cmd, done: make(chan error, 1)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "LISTEN "); ok {
				addr <- a
			}
		}
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill() // our own child, by its PID
			<-c.done
		}
	})
	select {
	case a := <-addr:
		c.url = "http://" + a
	case err := <-c.done:
		t.Fatalf("child exited before listening: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("child did not listen within 60 s")
	}
	return c
}

// waitKilled waits for the child to die of SIGKILL at its failpoint.
func (c *child) waitKilled(t *testing.T) {
	t.Helper()
	select {
	case err := <-c.done:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "the child stops at its failpoint")
		ws, ok := ee.Sys().(syscall.WaitStatus)
		require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "killed by its failpoint: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the child did not reach its failpoint within 60 s")
	}
}

// crashResponse is one answer to a request sent to a child; err when the
// connection died first.
type crashResponse struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func (c *child) post(path, key, idemKey string, body []byte) crashResponse {
	req, _ := http.NewRequest(http.MethodPost, c.url+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idemKey)
	client := &http.Client{Timeout: 60 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return crashResponse{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return crashResponse{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// TestIdempotency_CrashAtEveryStep kills a child server process at each
// step of a POST (before acting, before the write commits, after it
// commits and before answering, after answering), on both stores, then
// retries with the same key against a fresh child: the action happened
// exactly once, and every answer after it is the same response.
func TestIdempotency_CrashAtEveryStep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	for _, st := range []string{"sqlite", "postgres"} {
		t.Run(st, func(t *testing.T) {
			for _, fp := range []string{cloud.FailBeforeAction, cloud.FailBeforeCommit, cloud.FailAfterCommit, cloud.FailResponded} {
				for _, op := range []string{"create", "check-in"} {
					t.Run(fp+"/"+op, func(t *testing.T) { crashAt(t, st, fp, op) })
				}
			}
		})
	}
}

func crashAt(t *testing.T, storeName, failpoint, op string) {
	ctx := context.Background()
	var store cloud.Store
	var env []string
	switch storeName {
	case "sqlite":
		path := filepath.Join(t.TempDir(), "cloud.db")
		s, err := sqlite.Open(ctx, path, kektest.Ring())
		require.NoError(t, err)
		store, env = s, []string{crashStore + "=sqlite", crashSQLite + "=" + path}
	case "postgres":
		url := postgrestest.URL(t)
		schema := postgrestest.NewSchema(t, url)
		s, err := postgrestest.OpenIn(t, url, schema)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		store, env = s, []string{crashStore + "=postgres", crashPGURL + "=" + url, crashPGSchema + "=" + schema}
	}
	svc := cloud.NewService(store, time.Now)
	seed, err := svc.Seed(ctx, "Crash Org", cloud.PlanPro)
	require.NoError(t, err)
	_, err = httpapi.New(ctx, httpapi.Config{Service: svc}) // the server secrets, made once
	require.NoError(t, err)
	tenant := cloud.Tenant{OrgID: seed.Organisation.ID, Mode: cloud.ModeTest}
	key := seed.Keys.SecretTest

	visitBody := func(email string) []byte {
		b, _ := json.Marshal(map[string]any{"site_id": seed.Test.Sites[0].ID, "host_id": seed.Test.People[0], "type": "meeting",
			"expected_at": time.Now().UTC().Format(time.RFC3339),
			"visitor":     map[string]any{"name": "Crash Visitor", "email": email}})
		return b
	}
	path, body := "/v1/visits", visitBody("crash@example.org")
	// effects counts what the operation did: visits made, or check-ins.
	effects := func() int {
		vs, _, err := store.ListVisits(ctx, tenant, cloud.VisitFilter{}, cloud.Page{Limit: 100})
		require.NoError(t, err)
		return len(vs)
	}
	if op == "check-in" {
		// The visit to check in, made beforehand through the API of a
		// child without failpoints.
		pre := startChild(t, env, "")
		r := pre.post("/v1/visits", key, uuid(), visitBody("checkin@example.org"))
		require.NoError(t, r.err)
		require.Equal(t, http.StatusCreated, r.status, "%s", r.body)
		var v map[string]any
		require.NoError(t, json.Unmarshal(r.body, &v))
		require.NoError(t, pre.cmd.Process.Kill())
		<-pre.done
		path, body = "/v1/visits/"+v["id"].(string)+"/check-in", nil
		effects = func() int {
			evs, _, err := store.ListEvents(ctx, tenant, cloud.EventFilter{Type: cloud.EventVisitCheckedIn}, cloud.Page{Limit: 100})
			require.NoError(t, err)
			return len(evs)
		}
	}
	before := effects()
	if storeName == "sqlite" {
		require.NoError(t, store.Close()) // the child owns the file while it runs
	}
	idemKey := uuid()

	first := startChild(t, env, failpoint)
	r1 := first.post(path, key, idemKey, body)
	first.waitKilled(t)
	if failpoint == cloud.FailResponded {
		require.NoError(t, r1.err, "the response was sent before the process died")
	} else {
		require.Error(t, r1.err, "the process died before answering: %d %s", r1.status, r1.body)
	}

	second := startChild(t, env, "")
	r2 := second.post(path, key, idemKey, body)
	require.NoError(t, r2.err)
	r3 := second.post(path, key, idemKey, body)
	require.NoError(t, r3.err)
	require.NoError(t, second.cmd.Process.Kill())
	<-second.done

	if storeName == "sqlite" {
		s, err := sqlite.Open(ctx, env[1][len(crashSQLite)+1:], kektest.Ring())
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		store = s
	}
	require.Equal(t, before+1, effects(), "the action happened exactly once")

	want := http.StatusCreated
	if op == "check-in" {
		want = http.StatusOK
	}
	require.Equal(t, want, r2.status, "%s", r2.body)
	acted := failpoint == cloud.FailAfterCommit || failpoint == cloud.FailResponded
	if acted {
		require.Equal(t, "true", r2.header.Get("Idempotent-Replayed"), "the retry replays what the first request stored")
	} else {
		require.Empty(t, r2.header.Get("Idempotent-Replayed"), "nothing was stored: the retry acts")
	}
	if r1.err == nil {
		require.Equal(t, string(r1.body), string(r2.body), "the same response")
		require.Equal(t, r1.header.Get("Svc-Request-Id"), r2.header.Get("Svc-Request-Id"))
	}
	require.Equal(t, "true", r3.header.Get("Idempotent-Replayed"))
	require.Equal(t, r2.status, r3.status)
	require.Equal(t, string(r2.body), string(r3.body), "every answer after the action is the same response")
	require.Equal(t, r2.header.Get("Svc-Request-Id"), r3.header.Get("Svc-Request-Id"))
	require.Equal(t, r2.header.Get("Location"), r3.header.Get("Location"))
}
