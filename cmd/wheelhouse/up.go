package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/hub"
	"github.com/wheelhouse-dev/wheelhouse/local"
)

func upFlagSet(help io.Writer) (*flag.FlagSet, *hubFlags) {
	fs := newFlags("up", "up [--data DIR] [--http ADDR]", help)
	var f hubFlags
	f.register(fs, defaultDataDir(), "127.0.0.1:8080")
	return fs, &f
}

func runUp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, f := upFlagSet(stdout)
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg := f.config(stderr)
	if f.nats == hub.DefaultNATSAddr {
		cfg.NATSAddr = "127.0.0.1:0" // the local bridge goes through the hub's URL: any free port will do
	}
	u, err := local.Up(ctx, local.Config{Hub: cfg, Out: stdout})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nWheelhouse is running: %s\n", u.Hub.URL())
	if w := u.Hub.URLWarning(); w != "" {
		fmt.Fprintf(stdout, "Note: %s\n", w)
	}
	if u.Password != "" {
		fmt.Fprintf(stdout, "Log in as %q with password %s (shown once; also saved 0600 in %s)\n", u.Admin, u.Password, u.PasswordFile)
	} else {
		fmt.Fprintf(stdout, "Log in as %q with the password printed on the first run (saved in %s).\n", u.Admin, u.PasswordFile)
	}
	fmt.Fprintf(stdout, "The demo agent @%s/demo is in #general: try \"@%s/demo list the files\". Data: %s — stop with Ctrl-C.\n", u.Admin, u.Admin, cfg.DataDir)
	if len(u.Bridge.Devices()) == 0 {
		// The bridge prints the code on this terminal as it makes it (its
		// "device enrollment code" line just above): said once.
		_, exp := u.Bridge.NewEnrollCode()
		fmt.Fprintf(stdout, "To approve from your browser, enroll it once: log in, open your name → Devices → Enroll this device, and type the enrollment code printed just above (until %s; wheelhouse bridge devices add shows a new one).\n",
			exp.Local().Format("15:04"))
	}
	if u.DefaultSocket {
		fmt.Fprintf(stdout, "Answer its approval requests here too: wheelhouse approvals, wheelhouse approve ID --hash HEX, wheelhouse deny ID.\n\n")
	} else {
		fmt.Fprintf(stdout, "Another bridge runs on this machine; answer this one's approval requests with: wheelhouse approvals --socket %s\n\n", u.ControlSocket)
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "shutting down…")
	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return u.Close(cctx)
}
