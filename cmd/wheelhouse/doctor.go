package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/bridge/claude"
	"github.com/wheelhouse-dev/wheelhouse/bridge/codex"
	"github.com/wheelhouse-dev/wheelhouse/bridge/harnesses"
	"github.com/wheelhouse-dev/wheelhouse/internal/termsafe"
)

// runDoctor checks this machine's bridge: credentials, the hub, NATS, the
// config's agents and, for attached Claude Code projects, the hook wiring.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("doctor", "doctor [--config FILE] [--project DIR]", stderr)
	cfgPath := fs.String("config", "wheelhouse-bridge.toml", "the bridge config to check")
	credsPath := fs.String("credentials", bridge.DefaultCredentialsPath(), "the bridge credentials")
	project := fs.String("project", "", "also check the Claude Code hook wiring of this project")
	sock := fs.String("socket", bridge.DefaultControlSocket(), "the bridge's control socket")
	if err := parse(fs, args); err != nil {
		return err
	}
	problems := 0
	report := func(ok bool, what, detail string) {
		mark := "ok  "
		if !ok {
			mark = "FAIL"
			problems++
		}
		// Details quote the hub, settings files from the project and the
		// hook's records: all printed through termsafe.
		fmt.Fprintf(stdout, "%s %s", mark, termsafe.Line(what))
		if detail != "" {
			fmt.Fprintf(stdout, ": %s", termsafe.Line(detail))
		}
		fmt.Fprintln(stdout)
	}
	creds, err := bridge.LoadCredentials(*credsPath)
	report(err == nil, "credentials", errText(err, *credsPath))
	if creds != nil {
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		req, _ := http.NewRequestWithContext(hctx, "GET", creds.Hub+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				err = fmt.Errorf("%s/readyz answered %s", creds.Hub, resp.Status)
			}
		}
		report(err == nil, "hub "+creds.Hub, errText(err, "ready"))
		nc, err := creds.Connect()
		if err == nil {
			nc.Close()
		}
		report(err == nil, "NATS "+creds.NATSURL, errText(err, "this bridge's key is accepted"))
	}
	var attached []claude.DoctorOptions
	if cfg, err := bridge.LoadConfig(*cfgPath); err != nil {
		report(false, "config "+*cfgPath, err.Error())
	} else {
		report(true, "config "+*cfgPath, fmt.Sprintf("%d agent(s)", len(cfg.Agents)))
		known := harnesses.All()
		for _, a := range cfg.Agents {
			_, ok := known[a.Harness]
			detail := a.Harness
			switch a.Harness {
			case "codex", "claude", "claude-attach":
				bin := a.Binary
				if bin == "" {
					bin = map[string]string{"codex": "codex", "claude": "claude", "claude-attach": "claude"}[a.Harness]
				}
				if p, err := exec.LookPath(bin); err != nil {
					ok, detail = false, fmt.Sprintf("%s: %s not found (set binary = \"...\")", a.Harness, bin)
				} else {
					detail = a.Harness + " " + p
				}
			}
			if a.Harness == "claude-attach" {
				attached = append(attached, claude.DoctorOptions{Project: a.Dir, StateDir: a.Options["state_dir"]})
			}
			if _, exists := known[a.Harness]; !exists {
				ok, detail = false, "unknown harness "+a.Harness
			}
			report(ok, "agent "+a.Name, detail)
			if a.Harness == "claude" {
				fmt.Fprint(stdout, indent(termsafe.Text(claude.LaunchedSettings(a))))
			}
			checkGating(stdout, report, a, known, agentDirs(cfg.Agents))
		}
	}
	if *project != "" {
		attached = append(attached, claude.DoctorOptions{Project: *project})
	}
	for _, o := range attached {
		r := claude.DoctorWith(o)
		report(r.OK(), "claude hook in "+o.Project, "")
		fmt.Fprint(stdout, indent(termsafe.Text(r.String())))
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = bridge.Control(cctx, *sock, bridge.ControlRequest{Op: "list"})
	cancel()
	fmt.Fprintf(stdout, "info bridge process: %s\n", map[bool]string{true: "running (" + *sock + ")", false: "not running"}[err == nil])
	if problems > 0 {
		return fmt.Errorf("%d problem(s) found", problems)
	}
	fmt.Fprintln(stdout, "All checks passed.")
	return nil
}

func errText(err error, ok string) string {
	if err != nil {
		return err.Error()
	}
	return ok
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("     " + l + "\n")
	}
	return b.String()
}

// checkGating explains who may reach an agent's turns, and for codex checks
// that codex's own allow-list ($CODEX_HOME/rules) lies out of every agent's
// reach and lets nothing run unasked.
func checkGating(stdout io.Writer, report func(bool, string, string), a bridge.AgentConfig, known map[string]bridge.Factory, dirs []string) {
	pol, err := a.PolicyFile.Policy()
	if f, ok := known[a.Harness]; ok && err == nil {
		if h, err := f(bridge.Deps{Agent: a}); err == nil {
			for _, n := range bridge.GatingNotes(h, pol) {
				fmt.Fprintf(stdout, "info agent %s: %s\n", a.Name, n)
			}
		}
	}
	if a.Harness == "codex" {
		for _, c := range codex.CheckHome(a, dirs) {
			report(c.OK, "agent "+a.Name+" "+c.What, c.Detail)
		}
	}
}

// agentDirs are the working directories of every agent (absolute; "" is
// the bridge's own).
func agentDirs(agents []bridge.AgentConfig) []string {
	var out []string
	for _, a := range agents {
		if d, err := filepath.Abs(a.Dir); err == nil {
			out = append(out, d)
		}
	}
	return out
}
