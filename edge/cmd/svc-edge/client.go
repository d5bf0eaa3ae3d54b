package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/svc-vms/svc/edge"
	"github.com/svc-vms/svc/edge/config"
	"github.com/svc-vms/svc/gate/relay"
)

// scanTimeout bounds a scan request: the daemon answers after the relay's
// pulse, which is at most relay.MaxPulse.
const scanTimeout = relay.MaxPulse + 10*time.Second

// baseURL makes an http:// URL of host:port, or keeps a URL as given.
func baseURL(addr string) string {
	if strings.Contains(addr, "://") {
		return strings.TrimSuffix(addr, "/")
	}
	return "http://" + addr
}

// exitError ends a command with its own exit code; msg, when set, is
// printed as any other failure is.
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func addrFlag(fs *flag.FlagSet) *string {
	return fs.String("addr", env("SVC_EDGE_ADDR", config.DefaultListen), "the daemon's local HTTP address, host:port (env SVC_EDGE_ADDR)")
}

// status is `svc-edge status`: GET /status of the running daemon.
func status(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("status", "usage: svc-edge status [--addr HOST:PORT] [--json]\nShows the running daemon's sync, outbox, cache and gates.")
	addr := addrFlag(fs)
	raw := fs.Bool("json", false, "print the daemon's JSON as it is")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("status: unexpected argument %q", fs.Arg(0))}
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(baseURL(*addr) + "/status")
	if err != nil {
		return fmt.Errorf("status: is svc-edge running? %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if *raw {
		_, err := stdout.Write(body)
		return err
	}
	var st edge.StatusResponse
	if err := json.Unmarshal(body, &st); err != nil {
		return fmt.Errorf("status: the daemon's answer: %w", err)
	}
	return printStatus(stdout, st)
}

func printStatus(w io.Writer, st edge.StatusResponse) error {
	ago := func(t time.Time) string { return st.Now.Sub(t).Truncate(time.Second).String() + " ago" }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "edge\t%s\n", st.EdgeID)
	fmt.Fprintf(tw, "site\t%s (%s, organisation %s)\n", st.Site.SiteID, st.Site.Mode, st.Site.OrgID)
	if st.LastSync != nil {
		fmt.Fprintf(tw, "last sync\t%s (%s)\n", st.LastSync.Format(time.RFC3339), ago(*st.LastSync))
	} else {
		fmt.Fprintf(tw, "last sync\tnever\n")
	}
	fmt.Fprintf(tw, "sequence\t%d\n", st.Seq)
	if st.Stale {
		fmt.Fprintf(tw, "cache\tSTALE: %s (gates that fail secure refuse every scan)\n", st.StaleReason)
	} else {
		fmt.Fprintf(tw, "cache\tfresh\n")
	}
	fmt.Fprintf(tw, "cached\t%d visits, %d people, %d gates, %d keys\n", st.Cache.Visits, st.Cache.People, st.Cache.Gates, st.Cache.Keys)
	if st.Outbox.Oldest != nil {
		fmt.Fprintf(tw, "outbox\t%d facts waiting, oldest %s (%s)\n", st.Outbox.Depth, st.Outbox.Oldest.Format(time.RFC3339), ago(*st.Outbox.Oldest))
	} else {
		fmt.Fprintf(tw, "outbox\tempty\n")
	}
	broker := fields(st.Broker)
	switch {
	case len(st.Broker) == 0 || string(st.Broker) == "null":
		fmt.Fprintf(tw, "broker\tno sync half\n")
	case broker == nil:
		fmt.Fprintf(tw, "broker\t%s\n", st.Broker)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if broker != nil {
		fmt.Fprintln(w, "broker")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, f := range broker {
			fmt.Fprintf(tw, "  %s\t%s\n", f[0], f[1])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if u := st.Update; u != nil {
		printUpdate(w, *u, st.Now)
	}
	switch hw := st.Hardware; {
	case hw.Source == "":
		fmt.Fprintln(w, "gates")
	case hw.Source == edge.SourceCloud:
		fmt.Fprintln(w, "gates (hardware from the cloud)")
	default:
		fmt.Fprintln(w, "gates (hardware from the configuration file)")
	}
	if st.Hardware.Error != "" {
		fmt.Fprintf(w, "  HARDWARE FROM THE CLOUD NOT APPLIED: %s\n", st.Hardware.Error)
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, g := range st.Gates {
		door := ""
		if g.DoorOpen != nil {
			door = map[bool]string{true: "door open", false: "door shut"}[*g.DoorOpen]
		}
		name := g.Name
		if name == "" {
			name = "-"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", g.GateID, name, g.Direction, g.WhenStale, strings.Join(g.Readers, ", "), door)
	}
	return tw.Flush()
}

// printUpdate prints the update state: the release and slot, a download
// under way, and the last update's outcome with its reason.
func printUpdate(w io.Writer, u edge.UpdateStatus, now time.Time) {
	fmt.Fprintln(w, "update")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	slot := u.Slot
	if slot == "" {
		slot = "-"
	}
	fmt.Fprintf(tw, "  version\t%s (slot %s)\n", u.Version, slot)
	if !u.Enabled {
		fmt.Fprintf(tw, "  updates\toff: %s\n", u.Disabled)
	} else {
		state := u.State
		if u.Size > 0 {
			state += fmt.Sprintf(" %s: %d of %d bytes (%d%%)", u.Target, u.Bytes, u.Size, u.Bytes*100/u.Size)
		}
		fmt.Fprintf(tw, "  state\t%s\n", state)
		if u.Error != "" {
			fmt.Fprintf(tw, "  retrying\t%s\n", u.Error)
		}
	}
	if l := u.Last; l != nil {
		line := fmt.Sprintf("%s %s %s ago", l.Outcome, l.Version, now.Sub(l.At).Truncate(time.Second))
		if l.From != "" {
			line += " (from " + l.From + ")"
		}
		if l.Reason != "" {
			line += ": " + l.Reason
		}
		fmt.Fprintf(tw, "  last update\t%s\n", line)
	}
	_ = tw.Flush()
}

// scan is `svc-edge scan`: POST a token to the daemon at a gate. Its exit
// code is 0 when admitted, 1 when refused, 2 on any error.
func scan(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("scan", "usage: svc-edge scan --gate GATE_ID [--addr HOST:PORT] TOKEN\nScans TOKEN (- reads it from stdin) at the gate as a reader would; exit 0 admitted, 1 refused, 2 error.")
	gate := fs.String("gate", "", "the gate_... ID to scan at")
	addr := addrFlag(fs)
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	switch {
	case *gate == "":
		return usageError{"scan: --gate is required"}
	case fs.NArg() != 1:
		return usageError{"scan: give exactly one TOKEN (or - to read it from stdin)"}
	}
	token := fs.Arg(0)
	if token == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, 64<<10))
		if err != nil {
			return exitError{2, "scan: reading stdin: " + err.Error()}
		}
		token = string(b)
	}
	client := &http.Client{Timeout: scanTimeout}
	resp, err := client.Post(baseURL(*addr)+"/gates/"+*gate+"/scan", "text/plain; charset=utf-8", bytes.NewReader([]byte(token)))
	if err != nil {
		return exitError{2, fmt.Sprintf("scan: is svc-edge running? %v", err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return exitError{2, "scan: " + err.Error()}
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusInternalServerError {
		var e edge.ErrorResponse
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return exitError{2, fmt.Sprintf("scan: %s: %s", resp.Status, e.Error)}
		}
		return exitError{2, fmt.Sprintf("scan: %s: %s", resp.Status, strings.TrimSpace(string(body)))}
	}
	var res edge.ScanResponse
	if err := json.Unmarshal(body, &res); err != nil {
		return exitError{2, "scan: the daemon's answer: " + err.Error()}
	}
	printScan(stdout, res)
	switch {
	case res.Error != "":
		return exitError{2, "scan: " + res.Error}
	case res.Admitted:
		return nil
	}
	return exitError{code: 1}
}

func printScan(w io.Writer, r edge.ScanResponse) {
	var b strings.Builder
	if r.Admitted {
		fmt.Fprintf(&b, "admitted: %s", r.Kind)
	} else if r.Reason != "" {
		fmt.Fprintf(&b, "refused: %s", r.Reason)
	} else {
		b.WriteString("not decided")
	}
	if r.VisitID != "" {
		fmt.Fprintf(&b, " visit %s", r.VisitID)
	}
	if r.PassVisitID != "" && r.PassVisitID != r.VisitID {
		fmt.Fprintf(&b, " (pass of %s)", r.PassVisitID)
	}
	if r.Direction != "" {
		fmt.Fprintf(&b, " %s", r.Direction)
	}
	if r.PersonID != "" {
		fmt.Fprintf(&b, " person %s", r.PersonID)
	}
	if r.Repeat {
		b.WriteString(" (a repeat of the last punch: not recorded)")
	}
	if r.FactID != "" {
		fmt.Fprintf(&b, ", fact %s", r.FactID)
	}
	fmt.Fprintf(&b, ", decided in %dµs", r.DecisionMicros)
	fmt.Fprintln(w, b.String())
}

// fields lists a JSON object's members in their order, each value as
// text: strings bare, the zero time as "never", nested objects as
// name=value pairs. It returns nil for anything but an object.
func fields(raw json.RawMessage) [][2]string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out [][2]string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		out = append(out, [2]string{fmt.Sprint(k), fieldText(v)})
	}
	return out
}

func fieldText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.IsZero() {
			return "never"
		}
		return s
	}
	if inner := fields(v); inner != nil {
		parts := make([]string, len(inner))
		for i, f := range inner {
			parts[i] = f[0] + "=" + f[1]
		}
		return strings.Join(parts, " ")
	}
	return string(v)
}
