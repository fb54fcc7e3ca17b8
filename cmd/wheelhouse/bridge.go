package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/bridge/harnesses"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

type bridgeFlags struct {
	hub, token, name, ca, creds, config, logLevel, socket, journal string
	insecure, logJSON                                              bool
	callTimeout                                                    time.Duration
}

var bridgeSubcommands = []string{"pair", "run", "invitations", "accept", "decline", "devices"}

// bridgeFlagSets are the bridge subcommands' flag sets (also checked
// against docker-compose.yml by a test).
func bridgeFlagSets() map[string]func() *flag.FlagSet {
	sets := map[string]func() *flag.FlagSet{}
	for _, sub := range bridgeSubcommands {
		sets[sub] = func() *flag.FlagSet { fs, _ := bridgeFlagSet(sub, io.Discard); return fs }
	}
	return sets
}

func bridgeFlagSet(sub string, help io.Writer) (*flag.FlagSet, *bridgeFlags) {
	var f bridgeFlags
	var fs *flag.FlagSet
	switch sub {
	case "pair":
		fs = newFlags("bridge pair", "bridge pair --hub URL --token TOKEN [--ca FILE] [--name NAME]", help)
		fs.StringVar(&f.hub, "hub", "", "the hub's `URL`, as the pairing dialog shows it (https://…)")
		fs.StringVar(&f.token, "token", "", "the one-time pairing `token`")
		fs.StringVar(&f.ca, "ca", "", "trust this CA certificate (PEM `file`) for the hub instead of the system's; kept with the credentials")
		fs.BoolVar(&f.insecure, "insecure", false, "allow a plaintext http:// hub on another machine (only on a network you trust)")
		host, _ := os.Hostname()
		fs.StringVar(&f.name, "name", host, "a `name` for this machine")
	case "run":
		fs = newFlags("bridge run", "bridge run [--config FILE]", help)
		fs.StringVar(&f.config, "config", "wheelhouse-bridge.toml", "the bridge config `file` (agents and policies); see docs/bridge.example.toml")
		fs.BoolVar(&f.logJSON, "log-json", false, "log JSON lines instead of text")
		enumVar(fs, &f.logLevel, "log-level", "warn", logLevels, "log `level`")
		fs.StringVar(&f.socket, "socket", bridge.DefaultControlSocket(), "the control socket `path` for wheelhouse approvals/approve/deny")
		fs.DurationVar(&f.callTimeout, "call-timeout", bridge.DefaultCallTimeout, "how long a harness may take to take a message or start a turn before that message fails")
		fs.StringVar(&f.journal, "journal", bridge.DefaultJournalDir(), "where each agent's append-only journal is kept (wheelhouse inspect --verify reads it)")
	case "accept", "decline":
		fs = newFlags("bridge "+sub, "bridge "+sub+" ID [--socket PATH]", help)
		fs.StringVar(&f.socket, "socket", "", "the running bridge's control socket `path` (default: "+bridge.DefaultControlSocket()+", or wheelhouse up's)")
	case "devices":
		fs = newFlags("bridge devices", "bridge devices [list | add | revoke ID] [--socket PATH]", help)
		fs.StringVar(&f.socket, "socket", "", "the running bridge's control socket `path` (default: "+bridge.DefaultControlSocket()+", or wheelhouse up's)")
	default:
		fs = newFlags("bridge "+sub, "bridge "+sub, help)
	}
	fs.StringVar(&f.creds, "credentials", "", "the credentials `file` pairing writes (default: "+bridge.DefaultCredentialsPath()+", or wheelhouse up's)")
	return fs, &f
}

func runBridge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, `Usage: wheelhouse bridge <command>
  pair         pair this machine with a hub: --hub URL --token TOKEN [--ca FILE]
  run          run this machine's agents: --config FILE
  invitations  list invitations for your agents
  accept ID    let your agent join the room it was invited to
  decline ID   refuse an invitation
  devices      the devices you decide from: list, add (shows a code to
               enter in the browser), revoke ID

Run 'wheelhouse bridge <command> --help' for its flags.
`)
		if len(args) == 0 {
			return usageError{"name a bridge command"}
		}
		return nil
	}
	sub, rest := args[0], args[1:]
	known := false
	for _, s := range bridgeSubcommands {
		known = known || s == sub
	}
	if !known {
		return usageError{fmt.Sprintf("unknown bridge command %q (pair, run, invitations, accept, decline, devices)", sub)}
	}
	fs, f := bridgeFlagSet(sub, stdout)
	if err := parse(fs, rest); err != nil {
		return namedError{"bridge " + sub, err}
	}
	if err := runBridgeCommand(ctx, sub, fs, f, stdout, stderr); err != nil {
		return namedError{"bridge " + sub, err}
	}
	return nil
}

func runBridgeCommand(ctx context.Context, sub string, fs *flag.FlagSet, f *bridgeFlags, stdout, stderr io.Writer) error {
	switch sub {
	case "pair":
		if f.hub == "" || f.token == "" {
			return usageError{"bridge pair needs --hub and --token (the hub's pairing dialog shows the exact command)"}
		}
		if fs.NArg() > 0 {
			return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
		}
		pc := bridge.PairConfig{Hub: f.hub, Token: f.token, Name: f.name, Insecure: f.insecure}
		trust := "the system's CAs"
		if f.ca != "" {
			b, err := os.ReadFile(f.ca)
			if err != nil {
				return wh.Errorf(wh.EInvalid, "--ca: %v", err)
			}
			pc.CA, trust = b, "the CA in "+f.ca
		}
		c, err := bridge.Pair(ctx, pc)
		if err != nil {
			return err
		}
		path := f.creds
		if path == "" {
			path = bridge.DefaultCredentialsPath()
		}
		if err := c.Save(path); err != nil {
			return err
		}
		how := "its certificate checked against " + trust
		if strings.HasPrefix(c.NATSURL, "ws:") {
			how = "plaintext"
		}
		fmt.Fprintf(stdout, "Paired as bridge %s of @%s with %s (%s). Credentials saved to %s (0600).\nNext: write a config (see docs/bridge.example.toml) and run: wheelhouse bridge run --config FILE\n", cell(c.BridgeID), cell(c.Owner), cell(c.Hub), how, path)
		return nil
	case "run":
		cfg, err := bridge.LoadConfig(f.config)
		if err != nil {
			return err
		}
		path := f.creds
		if cfg.Credentials != "" && path == "" {
			path = cfg.Credentials // the config names them; the flag still wins
		}
		path, _ = credentialsPath(path)
		creds, err := bridge.LoadCredentials(path)
		if err != nil {
			return err
		}
		b, err := bridge.New(bridge.Config{Creds: creds, Agents: cfg.Agents, Harnesses: harnesses.All(), Out: stdout,
			ControlSocket: f.socket, CallTimeout: f.callTimeout, Logger: newLogger(stderr, f.logJSON, f.logLevel), JournalDir: f.journal,
			TrustFile: bridge.TrustPath(path)})
		if err != nil {
			return err
		}
		return b.Run(ctx)
	case "devices":
		return runDevices(ctx, fs, f, stdout)
	default: // invitations, accept, decline
		path, _ := credentialsPath(f.creds)
		creds, err := bridge.LoadCredentials(path)
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
			// The running bridge records the owner's consent itself.
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			_, err = control(cctx, f.socket, bridge.ControlRequest{Op: "invitation", Invitation: id, Decision: sub})
			switch {
			case err == nil:
				fmt.Fprintf(stdout, "%sed invitation %d.\n", map[string]string{"accept": "Accept", "decline": "Declin"}[sub], req.ID)
				return nil
			case wh.ErrorCode(err) != wh.EUnavailable:
				return err
			case sub == "accept":
				return wh.Errorf(wh.EUnavailable, "start the bridge first (wheelhouse bridge run): accepting records your consent on the running bridge, which the hub cannot do for you")
			}
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
	}
}
