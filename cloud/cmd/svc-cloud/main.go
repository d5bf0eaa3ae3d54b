// Command svc-cloud runs the cloud API and its administrative commands:
// serve, seed, keys create, keys revoke, edges create, edges list, passkeys
// rotate and kek rotate. It holds flags and wiring only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is this build's release version, which a release build sets
// with -ldflags "-X main.version=1.4.0"; "dev" for a build without one.
// /metrics shows it (svc_cloud_build_info).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "svc-cloud:", err)
		if _, usage := err.(usageError); usage {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
