package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/termsafe"
)

// runDevices lists, adds (an enrollment code) and revokes the devices the
// owner decides from. The running bridge answers; with none running, list
// and revoke read and change its trust store directly.
func runDevices(ctx context.Context, fs *flag.FlagSet, f *bridgeFlags, stdout io.Writer) error {
	op, id := "list", ""
	switch fs.NArg() {
	case 0:
	case 1:
		op = fs.Arg(0)
	case 2:
		op, id = fs.Arg(0), fs.Arg(1)
	default:
		return usageError{"bridge devices takes list, add, or revoke ID"}
	}
	switch {
	case op == "list" && id == "", op == "add" && id == "", op == "revoke" && id != "":
	case op == "revoke":
		return usageError{"name the device to revoke: wheelhouse bridge devices revoke ID (see wheelhouse bridge devices)"}
	default:
		return usageError{fmt.Sprintf("unknown devices command %q (list, add, revoke ID)", op)}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req := bridge.ControlRequest{Op: "devices"}
	switch op {
	case "add":
		req.Op = "devices-add"
	case "revoke":
		req = bridge.ControlRequest{Op: "devices-revoke", ID: id}
	}
	rep, err := control(cctx, f.socket, req)
	if err != nil && wh.ErrorCode(err) == wh.EUnavailable && op != "add" {
		path, _ := credentialsPath(f.creds)
		revoke := ""
		if op == "revoke" {
			revoke = id
		}
		devs, derr := bridge.DevicesOffline(path, revoke)
		if derr != nil {
			return derr
		}
		rep, err = &bridge.ControlReply{OK: true, Devices: devs}, nil
	}
	if err != nil {
		if op == "add" && wh.ErrorCode(err) == wh.EUnavailable {
			return wh.Errorf(wh.EUnavailable, "%s — the code must come from the running bridge", wh.ErrorMessage(err))
		}
		return err
	}
	switch op {
	case "add":
		fmt.Fprintf(stdout, "Enrollment code: %s (works once, until %s)\n", rep.Code, rep.Expires.Local().Format("15:04:05"))
		fmt.Fprintln(stdout, "In the browser you decide from: your name → Devices → Enroll this device, and type the code.")
		fmt.Fprintln(stdout, "The bridge trusts that device's signature on your approvals and on changes that let an agent do more.")
		return nil
	case "revoke":
		fmt.Fprintf(stdout, "Revoked %s: its signatures are refused from now on.\n", id)
	}
	if len(rep.Devices) == 0 {
		fmt.Fprintln(stdout, "No devices yet. Run wheelhouse bridge devices add and enter the code in your browser.")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tKIND\tADDED\tSTATUS")
	for _, d := range rep.Devices {
		status := "trusted"
		if d.Revoked {
			status = "revoked " + d.RevokedAt.Local().Format("2006-01-02 15:04")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", termsafe.Line(d.ID), termsafe.Line(d.Name), termsafe.Line(d.Kind), d.AddedAt.Local().Format("2006-01-02 15:04"), status)
	}
	return tw.Flush()
}
