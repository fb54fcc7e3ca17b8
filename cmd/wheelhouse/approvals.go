package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/termsafe"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

func controlFlags(name, usage string, help io.Writer) (*flag.FlagSet, *string) {
	fs := newFlags(name, usage, help)
	sock := fs.String("socket", "", "the running bridge's control socket `path` (default: "+bridge.DefaultControlSocket()+", or the one wheelhouse up uses)")
	return fs, sock
}

func runApprovals(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, sock := controlFlags("approvals", "approvals [--socket PATH] [--json] [--watch]", stdout)
	js := fs.Bool("json", false, "print JSON")
	watch := fs.Bool("watch", false, "keep running and print each request as it comes; while it runs, a request the bridge cannot hand to the hub waits for your decision here (wheelhouse approve/deny) instead of being denied at once")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *watch {
		return watchApprovals(ctx, *sock, *js, stdout)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rep, err := control(cctx, *sock, bridge.ControlRequest{Op: "list"})
	if err != nil {
		return err
	}
	if *js {
		b, err := json.Marshal(rep.Approvals)
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(termsafe.JSON(b), '\n'))
		return err
	}
	if len(rep.Approvals) == 0 {
		fmt.Fprintln(stdout, "No approval requests are waiting.")
		return nil
	}
	printApprovals(stdout, rep.Approvals)
	return nil
}

// watchApprovals prints the waiting requests, then each new one and each
// one that is gone (decided, expired, withdrawn), until ctx ends.
func watchApprovals(ctx context.Context, sock string, js bool, stdout io.Writer) error {
	path := controlSocket(sock)
	fmt.Fprintln(stdout, "Watching for approval requests (Ctrl-C to stop). While this runs, a request the bridge cannot hand to the hub waits here for you.")
	seen := map[string]bool{}
	return bridge.WatchApprovals(ctx, path, func(list []wire.ApprovalRequest) bool {
		now := map[string]bool{}
		var fresh []wire.ApprovalRequest
		for _, a := range list {
			now[a.ID] = true
			if !seen[a.ID] {
				fresh = append(fresh, a)
			}
		}
		for id := range seen {
			if !now[id] {
				fmt.Fprintf(stdout, "%s %s is no longer waiting (decided, expired or withdrawn)\n", time.Now().Format("15:04:05"), cell(id))
			}
		}
		seen = now
		if len(fresh) > 0 {
			if js {
				b, _ := json.Marshal(fresh)
				stdout.Write(append(termsafe.JSON(b), '\n'))
			} else {
				printApprovals(stdout, fresh)
			}
		}
		return true
	})
}

// printApprovals prints requests as a table, then each one's payload and
// the command that approves it.
func printApprovals(stdout io.Writer, approvals []wire.ApprovalRequest) {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tAGENT\tTOOL\tSUMMARY\tSTEERED BY\tEXPIRES")
	// Everything below came from the bridge, and before it from the model
	// and the hub: each value is printed through termsafe (cell).
	for _, a := range approvals {
		steered := "@" + strings.Join(a.SteeredBy, ", @")
		switch {
		case len(a.SteeredBy) == 0 && a.Tainted:
			steered = "(tainted)"
		case len(a.SteeredBy) == 0:
			steered = "-"
		case a.Tainted:
			steered += " (tainted)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", cell(a.ID), cell(a.Agent), cell(a.Tool), oneLine(a.Summary, 60), cell(steered), a.Expires.Local().Format("15:04:05"))
	}
	tw.Flush()
	for _, a := range approvals {
		fmt.Fprintf(stdout, "\n%s  hash %s\n  payload %s\n  approve: wheelhouse approve %s --hash %s\n",
			cell(a.ID), cell(a.PayloadHash), termsafe.Line(a.Payload), cell(a.ID), cell(a.PayloadHash))
	}
}

// oneLine is s as one safe table cell of at most n runes: newlines and
// tabs read as spaces, every other control character shows escaped.
func oneLine(s string, n int) string {
	return termsafe.LineN(strings.NewReplacer("\n", " ", "\t", " ").Replace(s), n)
}

// cell is a short value from the network as one safe table cell: tabs and
// newlines are shown escaped, so they cannot shift columns or add rows.
func cell(s string) string { return termsafe.LineN(s, 200) }

func decideLocally(ctx context.Context, decision string, args []string, stdout, stderr io.Writer) error {
	usage := "approve ID --hash HEX [--socket PATH]"
	if decision == "deny" {
		usage = "deny ID [--socket PATH]"
	}
	fs, sock := controlFlags(decision, usage, stdout)
	hash := fs.String("hash", "", "the payload hash shown with the request (wheelhouse approvals)")
	// Accept the id before or after the flags.
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if id == "" && fs.NArg() > 0 {
		id = fs.Arg(0)
	}
	if id == "" {
		return usageError{"name the approval request: wheelhouse " + usage}
	}
	if decision == "approve" && *hash == "" {
		return usageError{"approving needs --hash: the payload hash you were shown, so the approval covers exactly that call"}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := control(cctx, *sock, bridge.ControlRequest{Op: "decide", ID: id, Decision: decision, Hash: *hash}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s.\n", map[string]string{"approve": "Approved", "deny": "Denied"}[decision], cell(id))
	return nil
}

func runApprove(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return decideLocally(ctx, "approve", args, stdout, stderr)
}

func runDeny(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return decideLocally(ctx, "deny", args, stdout, stderr)
}
