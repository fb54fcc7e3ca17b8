package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/bridge/claude"
	"github.com/wheelhouse-dev/wheelhouse/bridge/codex"
	"github.com/wheelhouse-dev/wheelhouse/bridge/harnesses"
	"github.com/wheelhouse-dev/wheelhouse/bridge/openai"
	"github.com/wheelhouse-dev/wheelhouse/internal/termsafe"
)

// defaultBridgeConfig is where `bridge run` and doctor look for the config.
const defaultBridgeConfig = "wheelhouse-bridge.toml"

// runDoctor checks this machine's bridge: credentials, the hub, NATS, the
// config's agents and, for attached Claude Code projects, the hook wiring.
// It knows `wheelhouse up`, whose bridge needs no config file.
func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := newFlags("doctor", "doctor [--config FILE] [--project DIR]", stdout)
	cfgPath := fset.String("config", "", "the bridge config `file` to check (default: "+defaultBridgeConfig+")")
	credsFlag := fset.String("credentials", "", "the bridge credentials `file` (default: "+bridge.DefaultCredentialsPath()+", or wheelhouse up's)")
	project := fset.String("project", "", "also check the Claude Code hook wiring of this project `dir`")
	sock := fset.String("socket", "", "the bridge's control socket `path` (default: the standard one, or wheelhouse up's)")
	if err := parse(fset, args); err != nil {
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
	info := func(format string, a ...any) { fmt.Fprintf(stdout, "info "+format+"\n", a...) }

	credsPath, fromUp := credentialsPath(*credsFlag)
	creds, err := bridge.LoadCredentials(credsPath)
	detail := credsPath
	if fromUp {
		detail += " (wheelhouse up's local bridge)"
	}
	report(err == nil, "credentials", errText(err, detail))
	if creds != nil {
		report(true, "hub identity", creds.String())
		err := checkReady(ctx, creds)
		report(err == nil, "hub "+creds.Hub, errText(err, "ready"))
		nc, err := creds.Connect()
		if err == nil {
			nc.Close()
		}
		report(err == nil, "NATS "+creds.NATSURL, errText(err, "this bridge's key is accepted"))
	}

	var attached []claude.DoctorOptions
	path := *cfgPath
	if path == "" {
		path = defaultBridgeConfig
	}
	_, statErr := os.Stat(path)
	switch cfg, err := bridge.LoadConfig(path); {
	case err != nil && fromUp && *cfgPath == "" && errors.Is(statErr, fs.ErrNotExist):
		info("no %s: wheelhouse up runs its demo agent without one", path)
	case err != nil:
		report(false, "config "+path, err.Error())
	default:
		report(true, "config "+path, fmt.Sprintf("%d agent(s)", len(cfg.Agents)))
		known := harnesses.All()
		for _, a := range cfg.Agents {
			ok, detail := checkAgent(a, known)
			if a.Harness == "claude-attach" && a.Dir != "" {
				attached = append(attached, claude.DoctorOptions{Project: a.Dir, StateDir: a.Options["state_dir"]})
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
	checked := map[string]bool{}
	for _, o := range attached {
		r := claude.DoctorWith(o)
		if checked[r.ProjectDir+"\x00"+r.StateDir] {
			continue // the config's agent and --project name the same project
		}
		checked[r.ProjectDir+"\x00"+r.StateDir] = true
		report(r.OK(), "claude hook in "+r.ProjectDir, "")
		fmt.Fprint(stdout, indent(termsafe.Text(r.String())))
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	socket := controlSocket(*sock)
	_, err = bridge.Control(cctx, socket, bridge.ControlRequest{Op: "list"})
	cancel()
	info("bridge process: %s", map[bool]string{true: "running (" + socket + ")", false: "not running"}[err == nil])
	if problems > 0 {
		return fmt.Errorf("%d problem(s) found", problems)
	}
	fmt.Fprintln(stdout, "All checks passed.")
	return nil
}

// checkAgent checks what an agent needs on this machine: a known harness,
// its folder, and the binary a launched harness runs. An attached Claude
// Code agent runs no binary: the owner's own session calls the hook.
func checkAgent(a bridge.AgentConfig, known map[string]bridge.Factory) (bool, string) {
	if _, ok := known[a.Harness]; !ok {
		return false, "unknown harness " + a.Harness
	}
	if a.Dir != "" {
		if fi, err := os.Stat(a.Dir); err != nil || !fi.IsDir() {
			return false, fmt.Sprintf("%s: dir %s is not a folder on this machine", a.Harness, a.Dir)
		}
	} else if a.Harness == "claude-attach" {
		return false, "claude-attach: set dir to the project Claude Code runs in"
	}
	switch a.Harness {
	case "codex", "claude":
		bin := a.Binary
		if bin == "" {
			bin = a.Harness
		}
		p, err := exec.LookPath(bin)
		if err != nil {
			return false, fmt.Sprintf("%s: %s not found (install it, or set binary = \"...\")", a.Harness, bin)
		}
		return true, a.Harness + " " + p
	case "claude-attach":
		return true, "claude-attach (the owner's Claude Code session calls the hook; no binary needed here)"
	case "openai":
		detail, err := openai.Check(context.Background(), a)
		if err != nil {
			return false, "openai: " + err.Error()
		}
		return true, "openai " + detail
	}
	return true, a.Harness
}

// checkReady asks the hub's /readyz with the credentials' trust.
func checkReady(ctx context.Context, creds *bridge.Credentials) error {
	client, err := creds.HTTPClient(5 * time.Second)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, "GET", creds.Hub+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return creds.ReachError(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s/readyz answered %s", creds.Hub, resp.Status)
	}
	return nil
}

func errText(err error, ok string) string {
	if err != nil {
		return userMessage(err)
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
