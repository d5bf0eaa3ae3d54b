// Command clientcheck runs generated clients against a real svc-cloud,
// so that the OpenAPI document cannot regress for them (issue 19). It
// starts `svc-cloud serve --demo` on SQLite in a temporary folder (every
// listener on a free port), fetches the document the server serves at
// GET /v1/openapi.json, and from it:
//
//   - generates a Go client with oapi-codegen into a copy of
//     cloud/httpapi/testdata/goclient (a small module of its own) and
//     runs its flow;
//   - generates TypeScript types with openapi-typescript beside a copy of
//     cloud/httpapi/testdata/typescript, compiles its files with
//     tsc --strict and runs run.ts's flow with Node and openapi-fetch.
//
// Each flow creates a visit, checks it in, reads its visit.checked_in
// event through the typed union and reads typed problems, and exits
// non-zero on any mismatch. Without -node-modules (npm missing) the
// TypeScript half is skipped with a warning, unless
// SVC_TEST_REQUIRE_SERVICES=1.
//
// Run it with `make clients` (part of `make test`). It stops only the
// svc-cloud it started, by its PID.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/svc-vms/svc/cloud"
)

type options struct {
	cloud, goCmd, oapiCodegen, nodeModules, testdata string
	require, keep                                    bool
}

func main() {
	var o options
	flag.StringVar(&o.cloud, "cloud", ".tools/bin/svc-cloud", "the svc-cloud binary")
	flag.StringVar(&o.goCmd, "go", "go", "the go command")
	flag.StringVar(&o.oapiCodegen, "oapi-codegen", "v2.8.2", "the version of github.com/oapi-codegen/oapi-codegen/v2 to generate the Go client with")
	flag.StringVar(&o.nodeModules, "node-modules", "", "a node_modules folder with openapi-typescript, typescript and openapi-fetch (none: the TypeScript client is skipped)")
	flag.StringVar(&o.testdata, "testdata", "cloud/httpapi/testdata", "the folder holding goclient/ and typescript/")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary folder (the server's data and log, the document, the generated clients)")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "clientcheck: unexpected argument %q\n", flag.Arg(0))
		os.Exit(2)
	}
	o.require = os.Getenv("SVC_TEST_REQUIRE_SERVICES") == "1"
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "clientcheck:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, out io.Writer) error {
	for _, sub := range []string{"goclient", "typescript"} {
		if st, err := os.Stat(filepath.Join(o.testdata, sub)); err != nil || !st.IsDir() {
			return fmt.Errorf("-testdata %s: no %s folder in it (run from the repository's root)", o.testdata, sub)
		}
	}
	dir, err := os.MkdirTemp("", "svc-clientcheck-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintln(out, "clientcheck: keeping", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	srv, err := startCloud(ctx, o.cloud, dir, out)
	if srv != nil {
		defer srv.stop(out)
	}
	if err != nil {
		return err
	}
	doc := filepath.Join(dir, "openapi.json")
	if err := fetchDocument(ctx, srv.base+"/openapi.json", doc); err != nil {
		return err
	}
	env := []string{"SVC_API_URL=" + srv.base, "SVC_API_KEY=" + srv.key}

	// Both halves run even when the first fails: each says what broke.
	start := time.Now()
	goErr := goClient(ctx, o, dir, doc, env, out)
	if goErr == nil {
		fmt.Fprintf(out, "clientcheck: Go client passed (%.1fs)\n", time.Since(start).Seconds())
	}
	start = time.Now()
	tsErr := tsClient(ctx, o, dir, doc, env, out)
	if tsErr == nil && o.nodeModules != "" {
		fmt.Fprintf(out, "clientcheck: TypeScript client passed (%.1fs)\n", time.Since(start).Seconds())
	}
	if err := errors.Join(goErr, tsErr); err != nil {
		return fmt.Errorf("%w\n%s", err, srv.tail())
	}
	return nil
}

// goClient generates the Go client into a copy of the goclient module
// and runs its flow.
func goClient(ctx context.Context, o options, dir, doc string, env []string, out io.Writer) error {
	mod := filepath.Join(dir, "goclient")
	if err := copyFiles(filepath.Join(o.testdata, "goclient"), mod); err != nil {
		return fmt.Errorf("go client: %w", err)
	}
	// GOWORK=off: the copy is a module of its own, whatever go.work an
	// enclosing folder has.
	goEnv := append([]string{"GOWORK=off"}, env...)
	steps := [][]string{
		{o.goCmd, "run", "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@" + o.oapiCodegen, "-config", "oapi-codegen.yaml", doc},
		{o.goCmd, "vet", "."},
		{o.goCmd, "run", "."},
	}
	for _, args := range steps {
		if err := command(ctx, mod, goEnv, out, args...); err != nil {
			return fmt.Errorf("go client: %w", err)
		}
	}
	return nil
}

// tsClient generates the TypeScript types beside a copy of the
// typescript folder, compiles it with tsc --strict (the tsconfig's) and
// runs run.ts's flow with Node.
func tsClient(ctx context.Context, o options, dir, doc string, env []string, out io.Writer) error {
	skip := func(why string) error {
		if o.require {
			return fmt.Errorf("typescript client: %s, and SVC_TEST_REQUIRE_SERVICES=1 requires it", why)
		}
		fmt.Fprintf(out, "warning: %s: TypeScript client skipped (apt-get install npm to run it)\n", why)
		return nil
	}
	if o.nodeModules == "" {
		return skip("no -node-modules (npm not found)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return skip("node not found")
	}
	nm, err := filepath.Abs(o.nodeModules)
	if err != nil {
		return err
	}
	bin := func(name string) string { return filepath.Join(nm, ".bin", name) }
	for _, tool := range []string{bin("openapi-typescript"), bin("tsc"), filepath.Join(nm, "openapi-fetch", "package.json")} {
		if _, err := os.Stat(tool); err != nil {
			return fmt.Errorf("typescript client: -node-modules %s: %w (make clients installs openapi-typescript, typescript and openapi-fetch)", o.nodeModules, err)
		}
	}

	ts := filepath.Join(dir, "typescript")
	if err := copyFiles(filepath.Join(o.testdata, "typescript"), ts); err != nil {
		return fmt.Errorf("typescript client: %w", err)
	}
	// run.ts imports openapi-fetch, found through node_modules beside it;
	// the compiled JavaScript is an ES module, as openapi-fetch is.
	if err := os.Symlink(nm, filepath.Join(ts, "node_modules")); err != nil {
		return fmt.Errorf("typescript client: %w", err)
	}
	if err := os.WriteFile(filepath.Join(ts, "package.json"), []byte(`{"private": true, "type": "module"}`+"\n"), 0o644); err != nil {
		return fmt.Errorf("typescript client: %w", err)
	}
	// --default-non-nullable=false: docs/decisions.md, "The OpenAPI
	// document for generated clients".
	steps := [][]string{
		{bin("openapi-typescript"), doc, "--default-non-nullable=false", "--output", "api.ts"},
		{bin("tsc"), "-p", "tsconfig.json"},
		{node, filepath.Join("out", "run.js")},
	}
	for _, args := range steps {
		if err := command(ctx, ts, env, out, args...); err != nil {
			return fmt.Errorf("typescript client: %w", err)
		}
	}
	return nil
}

// command runs args in dir with env added to the environment, its
// output to out, and says what it runs.
func command(ctx context.Context, dir string, env []string, out io.Writer, args ...string) error {
	shown := make([]string, len(args))
	for i, a := range args {
		shown[i] = filepath.Base(a)
		if !filepath.IsAbs(a) {
			shown[i] = a
		}
	}
	fmt.Fprintf(out, "clientcheck [%s]: %s\n", filepath.Base(dir), strings.Join(shown, " "))
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", strings.Join(shown, " "), err)
	}
	return nil
}

// copyFiles copies the regular files of from (not its subfolders) into
// a new folder to.
func copyFiles(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	if err := os.Mkdir(to, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func fetchDocument(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("fetch the OpenAPI document: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("fetch the OpenAPI document: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !json.Valid(b) {
		return fmt.Errorf("GET %s: %s, want 200 and JSON", url, resp.Status)
	}
	return os.WriteFile(path, b, 0o644)
}

// server is the svc-cloud the check started: its API's base URL, the
// demo's test-mode secret key, and the process.
type server struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
	base string
	key  string
}

// startCloud runs svc-cloud serve --demo on SQLite in dir, every
// listener on a free port, and waits (up to a minute) for the line
// that gives its URL; the key is the one the demo wrote to demo.json.
func startCloud(ctx context.Context, bin, dir string, out io.Writer) (*server, error) {
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		return nil, fmt.Errorf("-cloud %s: not a file (make clients builds it)", bin)
	}
	data := filepath.Join(dir, "data")
	s := &server{log: filepath.Join(dir, "svc-cloud.log"), done: make(chan struct{})}
	logFile, err := os.Create(s.log)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, "serve", "--data", data, "--demo", "--addr", "127.0.0.1:0",
		"--mqtt-listen", "127.0.0.1:0", "--mqtt-tls-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--drain-delay", "0s")
	s.cmd.Stderr = logFile
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start svc-cloud: %w", err)
	}
	fmt.Fprintf(out, "clientcheck: started svc-cloud, pid %d, data in %s\n", s.cmd.Process.Pid, data)

	// Its output goes to the log too; the URL line is passed on.
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(logFile, sc.Text())
			if rest, ok := strings.CutPrefix(sc.Text(), "svc-cloud is serving "); ok {
				select {
				case urls <- strings.TrimSpace(rest):
				default:
				}
			}
		}
		s.err = s.cmd.Wait()
		logFile.Close()
		close(s.done)
	}()

	select {
	case s.base = <-urls:
	case <-s.done:
		return s, fmt.Errorf("svc-cloud exited before serving (%v)\n%s", s.err, s.tail())
	case <-time.After(time.Minute):
		return s, fmt.Errorf("svc-cloud did not print its URL within a minute\n%s", s.tail())
	case <-ctx.Done():
		return s, ctx.Err()
	}
	raw, err := os.ReadFile(filepath.Join(data, "demo.json"))
	if err != nil {
		return s, fmt.Errorf("the demo's keys: %w", err)
	}
	var keys cloud.SeedKeys
	if err := json.Unmarshal(raw, &keys); err != nil || !strings.HasPrefix(keys.SecretTest, "svc_sk_test_") {
		return s, fmt.Errorf("%s: no test-mode secret key (%v)", filepath.Join(data, "demo.json"), err)
	}
	s.key = keys.SecretTest
	fmt.Fprintf(out, "clientcheck: svc-cloud is serving %s\n", s.base)
	return s, nil
}

// stop sends SIGTERM to the server, and SIGKILL if it has not exited
// 10 s later.
func (s *server) stop(out io.Writer) {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	fmt.Fprintf(out, "clientcheck: stopped svc-cloud, pid %d\n", s.cmd.Process.Pid)
}

// tail is the end of the server's log, for an error message (the log
// itself is removed with the temporary folder unless -keep).
func (s *server) tail() string {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "svc-cloud's log ends:\n  " + strings.Join(lines, "\n  ")
}
