package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/svc-vms/svc/cloud"
)

// passKeyRow is a key as `passkeys rotate --json` prints it.
type passKeyRow struct {
	ID        string     `json:"id"`
	CreatedAt time.Time  `json:"created_at"`
	RetiresAt *time.Time `json:"retires_at"`
}

// passkeysRotate is `passkeys rotate`: a new pass-signing key for the
// organisation and mode; the keys it replaces verify until their passes
// have expired (cloud.Service.RotatePassKey).
func passkeysRotate(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	var cfg Config
	fs := flag.NewFlagSet("passkeys rotate", flag.ContinueOnError)
	cfg.storeFlags(fs)
	org := fs.String("org", "", "organisation ID")
	mode := fs.String("mode", "", "live or test")
	grace := fs.Duration("grace", cloud.PassKeyGrace, "the least time the replaced keys keep verifying, for personal passes handed out under them")
	asJSON := fs.Bool("json", false, "print {\"new\", \"retiring\"}")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	switch {
	case *org == "":
		return usageError{"passkeys rotate: --org is required"}
	case !cloud.Mode(*mode).Valid():
		return usageError{fmt.Sprintf("passkeys rotate: --mode %q: want live or test", *mode)}
	case *grace < 0:
		return usageError{"passkeys rotate: --grace may not be negative"}
	}
	t := cloud.Tenant{OrgID: *org, Mode: cloud.Mode(*mode)}
	var k cloud.PassKey
	var retiring []cloud.PassKey
	err := withService(ctx, &cfg, func(svc *cloud.Service) (err error) {
		if _, err := svc.Store().Organisation(ctx, *org); err != nil {
			return fmt.Errorf("passkeys rotate: organisation %s: %w", *org, err)
		}
		k, retiring, err = svc.RotatePassKey(ctx, t, *grace)
		return err
	})
	if err != nil {
		return err
	}
	if *asJSON {
		out := struct {
			New      passKeyRow   `json:"new"`
			Retiring []passKeyRow `json:"retiring"`
		}{New: passKeyRow{k.ID, k.CreatedAt, nil}, Retiring: []passKeyRow{}}
		for _, r := range retiring {
			out.Retiring = append(out.Retiring, passKeyRow{r.ID, r.CreatedAt, r.RetiredAt})
		}
		return json.NewEncoder(stdout).Encode(out)
	}
	fmt.Fprintf(stdout, "pass key %s signs the %s-mode passes of %s from now on\n", k.ID, *mode, *org)
	for _, r := range retiring {
		fmt.Fprintf(stdout, "pass key %s verifies until %s, then retires\n", r.ID, r.RetiredAt.UTC().Format(time.RFC3339))
	}
	return nil
}
