// Command svc-edge is the site appliance's program: run (the daemon, the
// edge package's App with the sync/mqttsync edge half), status and scan
// (clients of the running daemon's local HTTP API), and the installer's
// checks, qr decode (is a camera in focus?) and config check (will this
// file do?), and cache check and cache reset for a damaged cache file. It
// holds flags and wiring only.
package main

import (
	"os"
	_ "time/tzdata" // appliances may lack zoneinfo; gates decide in the site's zone
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
