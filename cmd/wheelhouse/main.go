// Command wheelhouse is the one binary: hub, bridge, and the owner's tools.
// main parses arguments and signals and hands off to the packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/internal/gcfloor"
	"github.com/wheelhouse-dev/wheelhouse/internal/termsafe"
)

// Version is set at build time (-ldflags "-X main.Version=...").
var Version = "dev"

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"up", "run everything on this machine: hub, embedded NATS, SQLite, a local bridge with the demo agent", runUp},
		{"hub", "run a hub node", runHub},
		{"bridge", "pair this machine with a hub, run its agents, answer invitations", runBridge},
		{"approvals", "list approval requests waiting for you on this machine", runApprovals},
		{"approve", "approve a request: wheelhouse approve ID --hash HEX", runApprove},
		{"deny", "deny a request: wheelhouse deny ID", runDeny},
		{"say", "speak to one of your agents on this machine, as its owner: wheelhouse say @owner/agent TEXT", runSay},
		{"inspect", "print an agent's persisted timeline: wheelhouse inspect @owner/agent", runInspect},
		{"hook", "agent harness hook entry points (wheelhouse hook claude)", runHook},
		{"doctor", "check config, connectivity and hook wiring", runDoctor},
		{"backup", "back up a running hub (database, event stream, files, snapshots): wheelhouse backup DIR", runBackup},
		{"restore", "restore a backup into an empty data directory: wheelhouse restore DIR", runRestore},
		{"nats-secrets", "generate the secrets a NATS cluster and its hubs share: wheelhouse nats-secrets DIR", runNATSSecrets},
		{"bench", "run the performance suite", runBench},
		{"version", "print the version", func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			fmt.Fprintf(stdout, "wheelhouse %s\n", Version)
			return nil
		}},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "Wheelhouse puts coding agents into team chat rooms, with owner consent, receipts and owner-only approvals.\n\nUsage: wheelhouse <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-13s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'wheelhouse <command> --help' for a command's flags. Flags may also be set as WHEELHOUSE_<FLAG> environment variables.\n")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && serves[os.Args[1]] {
		gcfloor.Start(gcfloor.DefaultFloor) // unless GOGC is set (docs/operations.md)
	}
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// serves names the commands that run servers: their processes keep a floor
// under the collector's heap goal, so a small heap is not collected every
// few milliseconds under load (the mention p99, docs/benchmarks.md).
var serves = map[string]bool{"up": true, "hub": true, "bridge": true, "bench": true}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			if err == nil || errors.Is(err, flag.ErrHelp) {
				return 0
			}
			name := c.name
			var ne namedError
			if errors.As(err, &ne) {
				name = ne.name
			}
			// Error messages can carry the hub's or a bridge's words.
			fmt.Fprintf(stderr, "wheelhouse %s: %s\n", name, termsafe.Text(userMessage(err)))
			var ue usageError
			if errors.As(err, &ue) {
				return 2
			}
			return 1
		}
	}
	fmt.Fprintf(stderr, "wheelhouse: unknown command %q (wheelhouse --help lists them)\n", args[0])
	return 2
}

// usageError is a mistake in the command line: exit status 2.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

// namedError names the subcommand an error came from (wheelhouse bridge
// pair: …).
type namedError struct {
	name string
	err  error
}

func (n namedError) Error() string { return n.err.Error() }
func (n namedError) Unwrap() error { return n.err }

func userMessage(err error) string {
	var e *wh.Error
	if errors.As(err, &e) {
		if e.Code == wh.EInternal && e.Err != nil {
			return e.Message + ": " + e.Err.Error()
		}
		return e.Message
	}
	return err.Error()
}
