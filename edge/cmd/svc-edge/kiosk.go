package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/svc-vms/svc/kiosk"
)

const kioskUsage = `usage:
  svc-edge kiosk pair [--name NAME] [--mode visitor|reception] [--printer HOST:PORT] [--addr HOST:PORT]
                                    show a one-time code that pairs a browser as a kiosk
  svc-edge kiosk list [--addr HOST:PORT]
                                    list the paired kiosks
  svc-edge kiosk revoke [--addr HOST:PORT] DEVICE_ID
                                    unpair a kiosk: its browser sees the pairing page again
  svc-edge kiosk printer [--addr HOST:PORT] DEVICE_ID HOST:PORT|none
                                    set the Brother QL label printer a kiosk prints badges on
  svc-edge kiosk pin [--addr HOST:PORT]
                                    set the site's reception PIN (read from stdin)
They talk to the running daemon on its local address.`

// kioskCommand is `svc-edge kiosk ...`: the daemon's kiosk administration,
// which answers on its loopback address only.
func kioskCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{kioskUsage}
	}
	fs := newFlagSet("kiosk "+args[0], kioskUsage)
	addr := addrFlag(fs)
	var name, mode, printer *string
	if args[0] == "pair" {
		name = fs.String("name", "Reception kiosk", "a name for the device, shown by kiosk list")
		mode = fs.String("mode", kiosk.ModeVisitor, "visitor (facing the door; reception behind the PIN) or reception")
		printer = fs.String("printer", "", "host:port of the kiosk's Brother QL label printer (port 9100)")
	}
	if err := parse(fs, args[1:], stderr); err != nil {
		return err
	}
	c := adminClient{base: baseURL(*addr)}
	switch args[0] {
	case "pair":
		if fs.NArg() > 0 {
			return usageError{fmt.Sprintf("kiosk pair: unexpected argument %q", fs.Arg(0))}
		}
		var code kiosk.PairingCode
		if err := c.do(http.MethodPost, "/kiosk/pairing-codes", kiosk.CodeRequest{Name: *name, Mode: *mode, Printer: *printer}, &code); err != nil {
			return fmt.Errorf("kiosk pair: %w", err)
		}
		_, err := fmt.Fprintf(stdout, "pairing code: %s\nType it on the kiosk's pairing page within %s (until %s). It works once.\n",
			dash(code.Code), kiosk.PairingTTL, code.Expires.Local().Format("15:04"))
		return err
	case "list":
		var devs []kiosk.DeviceJSON
		if err := c.do(http.MethodGet, "/kiosk/devices", nil, &devs); err != nil {
			return fmt.Errorf("kiosk list: %w", err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tMODE\tPRINTER\tPAIRED\tLAST SEEN")
		for _, d := range devs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.Name, d.Mode, orDash(d.Printer),
				d.PairedAt.Local().Format(time.DateTime), d.LastSeen.Local().Format(time.DateTime))
		}
		return tw.Flush()
	case "revoke":
		if fs.NArg() != 1 {
			return usageError{"kiosk revoke: name one DEVICE_ID (see kiosk list)"}
		}
		var d kiosk.DeviceJSON
		if err := c.do(http.MethodPost, "/kiosk/devices/"+fs.Arg(0)+"/revoke", nil, &d); err != nil {
			return fmt.Errorf("kiosk revoke: %w", err)
		}
		_, err := fmt.Fprintf(stdout, "revoked %s (%s)\n", d.ID, d.Name)
		return err
	case "printer":
		if fs.NArg() != 2 {
			return usageError{"kiosk printer: name a DEVICE_ID and a HOST:PORT (or none)"}
		}
		p := fs.Arg(1)
		if p == "none" {
			p = ""
		}
		var d kiosk.DeviceJSON
		if err := c.do(http.MethodPost, "/kiosk/devices/"+fs.Arg(0)+"/printer", map[string]string{"printer": p}, &d); err != nil {
			return fmt.Errorf("kiosk printer: %w", err)
		}
		_, err := fmt.Fprintf(stdout, "%s prints on %s\n", d.Name, orDash(d.Printer))
		return err
	case "pin":
		fmt.Fprintf(stderr, "New reception PIN (%d to %d digits): ", kiosk.MinPIN, kiosk.MaxPIN)
		line, err := bufio.NewReader(io.LimitReader(stdin, 64)).ReadString('\n')
		if err != nil && line == "" {
			return fmt.Errorf("kiosk pin: no PIN on stdin")
		}
		if err := c.do(http.MethodPost, "/kiosk/pin", map[string]string{"pin": strings.TrimSpace(line)}, nil); err != nil {
			return fmt.Errorf("kiosk pin: %w", err)
		}
		_, err = fmt.Fprintln(stdout, "reception PIN set")
		return err
	}
	return usageError{fmt.Sprintf("unknown command %q\n%s", "kiosk "+args[0], kioskUsage)}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// adminClient calls the daemon's local kiosk administration.
type adminClient struct{ base string }

func (c adminClient) do(method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("is svc-edge running with a kiosk? %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var e kiosk.AdminError
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s", e.Error)
		}
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}
