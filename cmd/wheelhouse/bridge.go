package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/bridge/harnesses"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

type bridgeFlags struct {
	hub, token, name, creds, config, logLevel, journal string
	logJSON                                            bool
	callTimeout                                        time.Duration
}

// bridgeFlagSets are the bridge subcommands' flag sets (also checked
// against docker-compose.yml by a test).
func bridgeFlagSets() map[string]func() *flag.FlagSet {
	return map[string]func() *flag.FlagSet{
		"pair": func() *flag.FlagSet { fs, _ := bridgeFlagSet("pair", io.Discard); return fs },
		"run":  func() *flag.FlagSet { fs, _ := bridgeFlagSet("run", io.Discard); return fs },
	}
}

func bridgeFlagSet(sub string, stderr io.Writer) (*flag.FlagSet, *bridgeFlags) {
	var f bridgeFlags
	var fs *flag.FlagSet
	switch sub {
	case "pair":
		fs = newFlags("bridge pair", "bridge pair --hub URL --token TOKEN [--name NAME]", stderr)
		fs.StringVar(&f.hub, "hub", "", "the hub's URL, as the pairing page shows it")
		fs.StringVar(&f.token, "token", "", "the one-time pairing token")
		host, _ := os.Hostname()
		fs.StringVar(&f.name, "name", host, "a name for this machine")
	case "run":
		fs = newFlags("bridge run", "bridge run [--config FILE]", stderr)
		fs.StringVar(&f.config, "config", "wheelhouse-bridge.toml", "the bridge config file (agents and policies); see docs/bridge.example.toml")
		fs.BoolVar(&f.logJSON, "log-json", false, "log JSON lines instead of text")
		fs.StringVar(&f.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
		fs.DurationVar(&f.callTimeout, "call-timeout", bridge.DefaultCallTimeout, "how long a harness may take to take a message or start a turn before that message fails")
		fs.StringVar(&f.journal, "journal", bridge.DefaultJournalDir(), "where each agent's append-only journal is kept (wheelhouse inspect --verify reads it)")
	default:
		fs = newFlags("bridge "+sub, "bridge "+sub, stderr)
	}
	fs.StringVar(&f.creds, "credentials", bridge.DefaultCredentialsPath(), "the credentials file pairing writes")
	return fs, &f
}

func runBridge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, `Usage: wheelhouse bridge <command>

  pair         pair this machine with a hub: --hub URL --token TOKEN
  run          run this machine's agents: --config FILE
  invitations  list invitations for your agents
  accept ID    let your agent join the room it was invited to
  decline ID   refuse an invitation
`)
		if len(args) == 0 {
			return usageError{"name a bridge command"}
		}
		return nil
	}
	sub, rest := args[0], args[1:]
	fs, f := bridgeFlagSet(sub, stderr)
	if err := parse(fs, rest); err != nil {
		return err
	}
	switch sub {
	case "pair":
		if f.hub == "" || f.token == "" {
			return usageError{"bridge pair needs --hub and --token (the hub's pairing page shows the exact command)"}
		}
		c, err := bridge.Pair(ctx, f.hub, f.token, f.name)
		if err != nil {
			return err
		}
		if err := c.Save(f.creds); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Paired as bridge %s of @%s. Credentials saved to %s (0600).\nNext: write a config (see docs/bridge.example.toml) and run: wheelhouse bridge run --config FILE\n", cell(c.BridgeID), cell(c.Owner), f.creds)
		return nil
	case "run":
		cfg, err := bridge.LoadConfig(f.config)
		if err != nil {
			return err
		}
		path := f.creds
		if cfg.Credentials != "" && !flagSet(fs, "credentials") {
			path = cfg.Credentials // the config names them; the flag still wins
		}
		creds, err := bridge.LoadCredentials(path)
		if err != nil {
			return err
		}
		b, err := bridge.New(bridge.Config{Creds: creds, Agents: cfg.Agents, Harnesses: harnesses.All(), Out: stdout,
			ControlSocket: bridge.DefaultControlSocket(), CallTimeout: f.callTimeout, Logger: newLogger(stderr, f.logJSON, f.logLevel), JournalDir: f.journal})
		if err != nil {
			return err
		}
		return b.Run(ctx)
	case "invitations", "accept", "decline":
		creds, err := bridge.LoadCredentials(f.creds)
		if err != nil {
			return err
		}
		req := wire.InvitationsRequest{}
		if sub != "invitations" {
			if fs.NArg() != 1 {
				return usageError{"bridge " + sub + " needs the invitation id (see wheelhouse bridge invitations)"}
			}
			id, err := strconv.ParseInt(fs.Arg(0), 10, 64)
			if err != nil {
				return usageError{"invitation ids are numbers"}
			}
			req = wire.InvitationsRequest{Decide: sub, ID: id}
		}
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		invs, err := creds.Invitations(cctx, req)
		if err != nil {
			return err
		}
		if sub != "invitations" {
			fmt.Fprintf(stdout, "%sed invitation %d.\n", map[string]string{"accept": "Accept", "decline": "Declin"}[sub], req.ID)
			return nil
		}
		if len(invs) == 0 {
			fmt.Fprintln(stdout, "No invitations for your agents.")
			return nil
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tAGENT\tROOM\tASKED BY\tSTATUS")
		for _, in := range invs {
			fmt.Fprintf(tw, "%d\t@%s\t%s\t@%s\t%s\n", in.ID, cell(in.Agent), cell(in.Room), cell(in.RequestedBy), cell(in.Status))
		}
		return tw.Flush()
	default:
		return usageError{fmt.Sprintf("unknown bridge command %q (pair, run, invitations, accept, decline)", sub)}
	}
}

// flagSet reports whether name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
