package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/gate/qrdecode"
)

const usage = `usage:
  svc-edge enrol --cloud URL [--data DIR] [--ca FILE] [--config FILE]
                                    show a one-time enrolment code, wait until it is claimed, write the config file
  svc-edge run [--config FILE] [--simulate] [--cloud URL [--data DIR] [--ca FILE]]
                                    run the appliance until SIGINT or SIGTERM (enrolling it first when it has
                                    no config file and --cloud is given)
  svc-edge supervise --slots DIR -- run [--config FILE] ...
                                    run the daemon from the current slot; try, commit or roll back signed updates
  svc-edge version                  print this binary's release version
  svc-edge status [--addr HOST:PORT] [--json]
                                    show the running daemon's sync, outbox, cache and gates
  svc-edge scan --gate GATE_ID [--addr HOST:PORT] TOKEN
                                    scan a pass token at a gate; exit 0 admitted, 1 refused, 2 error
  svc-edge qr decode FILE...        print the text of the QR code in each image (PNG or JPEG), one line each
  svc-edge config check [--config FILE]
                                    load and validate a config file, print it resolved with secrets hidden
  svc-edge cache check [--config FILE]
                                    read the cache file without changing it; exit 1 when it is damaged
  svc-edge cache reset [--config FILE] [--force]
                                    move a damaged cache file aside and start a new one with the facts it still holds
  svc-edge kiosk pair|list|revoke|printer|pin
                                    pair browsers as reception kiosks and manage them (svc-edge kiosk for help)
Every flag also reads an SVC_* variable; run a command with -h for its flags.`

// defaultConfig is where the appliance's image puts the config file.
const defaultConfig = "/etc/svc-edge/config.json"

// usageError is a mistake on the command line; run returns 2 for it.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// errUndecoded is returned by qr decode when a file held no readable code;
// its lines already say which and why.
var errUndecoded = errors.New("not every file decoded")

// run runs the command in args and returns the process's exit code: 0 on
// success, 2 for a usage mistake, 1 for any other failure, whose reason it
// prints to stderr; a command with codes of its own (scan) returns an
// exitError.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := dispatch(args, stdin, stdout, stderr)
	var exit exitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &exit):
		if exit.msg != "" {
			fmt.Fprintln(stderr, "svc-edge:", exit.msg)
		}
		return exit.code
	case errors.As(err, new(usageError)):
		fmt.Fprintln(stderr, "svc-edge:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "svc-edge:", err)
		return 1
	}
}

func dispatch(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{usage}
	}
	switch args[0] {
	case "run":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return runDaemon(ctx, args[1:], stdout, stderr)
	case "enrol", "enroll":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return enrolCommand(ctx, args[1:], stdout, stderr)
	case "supervise":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return supervise(ctx, args[1:], stderr)
	case "version":
		fmt.Fprintln(stdout, version)
		return nil
	case "status":
		return status(args[1:], stdout, stderr)
	case "scan":
		return scan(args[1:], stdin, stdout, stderr)
	case "qr":
		if len(args) > 1 && args[1] == "decode" {
			return qrDecode(args[2:], stdout, stderr)
		}
	case "config":
		if len(args) > 1 && args[1] == "check" {
			return configCheck(args[2:], stdout, stderr)
		}
	case "cache":
		if len(args) > 1 && args[1] == "check" {
			return cacheCheck(args[2:], stdout, stderr)
		}
		if len(args) > 1 && args[1] == "reset" {
			return cacheReset(args[2:], stdout, stderr, time.Now())
		}
	case "kiosk":
		return kioskCommand(args[1:], stdin, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return usageError{fmt.Sprintf("unknown command %q\n%s", strings.Join(args, " "), usage)}
}

// newFlagSet is a command's flags, with usage as its -h text.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses a command's flags.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	return nil
}

func qrDecode(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("qr decode", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: svc-edge qr decode FILE...\nPrints one line per file: the code's text, or \"error: FILE: REASON\".")
	}
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{"qr decode: name at least one image file"}
	}
	decoded, err := qrdecode.DecodeFiles(fs.Args(), stdout)
	if err != nil {
		return fmt.Errorf("qr decode: %w", err)
	}
	if decoded < fs.NArg() {
		return fmt.Errorf("qr decode: %d of %d files: %w", fs.NArg()-decoded, fs.NArg(), errUndecoded)
	}
	return nil
}

func configCheck(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("config check", flag.ContinueOnError)
	path := fs.String("config", env("SVC_EDGE_CONFIG", defaultConfig), "the config file (env SVC_EDGE_CONFIG)")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("config check: unexpected argument %q", fs.Arg(0))}
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(cfg, "", "  ") // MarshalJSON hides the password
	if err != nil {
		return fmt.Errorf("config check: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "%s\n", out)
	return err
}

// env returns the variable's value, or def when it is unset or empty.
func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
