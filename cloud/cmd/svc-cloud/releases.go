package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/svc-vms/svc/cloud"
	"github.com/svc-vms/svc/shared/release"
)

// releasesKeygen is `svc-cloud releases keygen --out FILE`: a release key,
// its private half written 0600 for whoever publishes releases, its public
// half printed for the appliance's build (release.TrustedKeys).
func releasesKeygen(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("releases keygen", flag.ContinueOnError)
	out := fs.String("out", "", "the private key file to write (mode 0600; never replaced)")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *out == "" {
		return usageError{"releases keygen: --out is required"}
	}
	pub, err := release.WriteKeyFile(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "release key written to %s (keep it off the appliances and out of the repository)\n"+
		"key id:     %s\npublic key: %s\nbuild appliances that trust it with:\n"+
		"  go build -ldflags \"-X github.com/svc-vms/svc/shared/release.TrustedKeys=%s\" ./edge/cmd/svc-edge\n",
		*out, release.KeyID(pub), release.PublicKeyString(pub), release.PublicKeyString(pub))
	return nil
}

// releasesAdd is `svc-cloud releases add FILE --version V --arch A
// --sign-with KEYFILE`: the manifest made from FILE, signed, and stored
// with FILE in the database, so that every process sharing it serves it.
func releasesAdd(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	var cfg Config
	fs := flag.NewFlagSet("releases add", flag.ContinueOnError)
	cfg.storeFlags(fs)
	version := fs.String("version", "", "the release's version, as svc-edge version prints it")
	arch := fs.String("arch", "", "amd64, arm64, or arm/6 and arm/7 (GOARCH/GOARM)")
	kind := fs.String("kind", release.KindBinary, "binary (a svc-edge executable) or rootfs (an image)")
	keyFile := fs.String("sign-with", "", "the release key file (svc-cloud releases keygen)")
	var file string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		file, args = args[0], args[1:]
	}
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	goarch, goarm, _ := strings.Cut(*arch, "/")
	switch {
	case file == "":
		return usageError{"releases add: name the bundle: releases add FILE --version V --arch A --sign-with KEYFILE"}
	case !release.ValidVersion(*version):
		return usageError{fmt.Sprintf("releases add: --version %q: 1 to 64 letters, digits and .+-_", *version)}
	case *keyFile == "":
		return usageError{"releases add: --sign-with is required"}
	}
	if err := release.ValidArch(goarch, goarm); err != nil {
		return usageError{fmt.Sprintf("releases add: --arch %q: %v", *arch, err)}
	}
	priv, err := release.ReadKeyFile(*keyFile)
	if err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("releases add: %w", err)
	}
	defer f.Close()
	m, err := release.Describe(f, *version, goarch, goarm, *kind, time.Now())
	if err != nil {
		return fmt.Errorf("releases add: %w", err)
	}
	env, err := release.Sign(m, priv)
	if err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	var r cloud.Release
	err = withService(ctx, &cfg, func(svc *cloud.Service) (err error) {
		r, err = svc.AddRelease(ctx, env, priv.Public().(ed25519.PublicKey), f)
		return err
	})
	if errors.Is(err, cloud.ErrConflict) {
		return fmt.Errorf("releases add: release %s for %s exists; a version is published once", *version, cloud.Platform(m))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "release %s for %s: %d bytes, SHA-256 %s, signed by key %s\n", r.Version, r.Platform, r.Size, r.SHA256, env.KeyID)
	return nil
}

// releasesList is `svc-cloud releases list`.
func releasesList(ctx context.Context, args []string, stdout io.Writer, stderr *os.File) error {
	var cfg Config
	fs := flag.NewFlagSet("releases list", flag.ContinueOnError)
	cfg.storeFlags(fs)
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	return withService(ctx, &cfg, func(svc *cloud.Service) error {
		rs, err := svc.Store().ListReleases(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tPLATFORM\tKIND\tSIZE\tSHA-256\tADDED")
		for _, r := range rs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", r.Version, r.Platform, r.Kind, r.Size, r.SHA256, r.AddedAt.Format(time.RFC3339))
		}
		return tw.Flush()
	})
}
