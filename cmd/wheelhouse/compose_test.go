package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"go.yaml.in/yaml/v3"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/hub"
	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
)

// flagSetFor returns the flag set of a (sub)command named by args, and the
// remaining args.
func flagSetFor(args []string) (*flag.FlagSet, []string, bool) {
	sets := map[string]func() *flag.FlagSet{
		"hub":          func() *flag.FlagSet { fs, _ := hubFlagSet(io.Discard); return fs },
		"up":           func() *flag.FlagSet { fs, _ := upFlagSet(io.Discard); return fs },
		"nats-secrets": func() *flag.FlagSet { fs, _, _ := natsSecretsFlagSet(io.Discard); return fs },
	}
	for k, v := range bridgeFlagSets() {
		sets["bridge "+k] = v
	}
	for n := 2; n >= 1; n-- {
		if len(args) >= n {
			if f, ok := sets[strings.Join(args[:n], " ")]; ok {
				return f(), args[n:], true
			}
		}
	}
	return nil, nil, false
}

type composeService struct {
	Command     []string          `yaml:"command"`
	Volumes     []string          `yaml:"volumes"`
	Environment map[string]string `yaml:"environment"`
	Restart     string            `yaml:"restart"`
}

// hostFile maps a container path to the repository file a service mounts
// there ("./deploy/nats.conf:/etc/nats/nats.conf:ro").
func (s composeService) hostFile(t *testing.T, containerPath string) string {
	for _, v := range s.Volumes {
		p := strings.Split(v, ":")
		if len(p) >= 2 && p[1] == containerPath && strings.HasPrefix(p[0], "./") {
			return testhub.RepoFile(p[0])
		}
	}
	t.Fatalf("nothing from the repository is mounted at %s", containerPath)
	return ""
}

var composeVar = regexp.MustCompile(`\$\{[A-Z0-9_]+:-([^}]*)\}`)

// TestComposeFile checks docker-compose.yml without a Docker engine: every
// wheelhouse command line parses and makes a valid config, every
// nats-server command line loads the shipped deploy/nats.conf, the image
// has every binary, long-running services restart, and the bridge's config
// names only agents its image can run.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile(testhub.RepoFile("docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile(testhub.RepoFile("Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var installed []string
	for _, m := range regexp.MustCompile(`(?m)^COPY --from=build (.+) /usr/local/bin/`).FindAllStringSubmatch(string(dockerfile), -1) {
		for _, f := range strings.Fields(m[1]) {
			installed = append(installed, filepath.Base(f))
		}
	}
	counts := map[string]int{}
	for name, svc := range doc.Services {
		if len(svc.Command) == 0 {
			t.Errorf("service %s: no command", name)
			continue
		}
		if !slices.Contains(installed, svc.Command[0]) {
			t.Errorf("service %s runs %s, which the Dockerfile does not install (%v)", name, svc.Command[0], installed)
		}
		if name != "secrets" && svc.Restart != "unless-stopped" {
			t.Errorf("service %s: restart %q, want unless-stopped", name, svc.Restart)
		}
		args := make([]string, len(svc.Command))
		for i, a := range svc.Command {
			args[i] = composeVar.ReplaceAllString(a, "$1")
		}
		switch args[0] {
		case "wheelhouse":
			checkWheelhouseService(t, name, svc, args[1:])
			counts[args[1]]++
		case "nats-server":
			checkNATSService(t, name, svc, args[1:])
			counts["nats-server"]++
		default:
			t.Errorf("service %s: unexpected command %s", name, args[0])
		}
	}
	if counts["hub"] != 2 || counts["bridge"] != 1 || counts["nats-server"] != 3 || counts["nats-secrets"] != 1 {
		t.Fatalf("services: %v; want three NATS servers, their secrets, two hubs and a bridge", counts)
	}
}

func checkWheelhouseService(t *testing.T, name string, svc composeService, args []string) {
	fs, rest, ok := flagSetFor(args)
	if !ok {
		t.Errorf("service %s: unknown command %v", name, args)
		return
	}
	if err := fs.Parse(rest); err != nil {
		t.Errorf("service %s: %v", name, err)
		return
	}
	wantArgs := 0
	if args[0] == "nats-secrets" {
		wantArgs = 1
	}
	if fs.NArg() != wantArgs {
		t.Errorf("service %s: arguments %v", name, fs.Args())
	}
	switch args[0] {
	case "hub":
		if fs.Lookup("public-url").Value.String() == "" {
			t.Errorf("service %s: no --public-url: pairing commands would name the container", name)
		}
		var f hubFlags
		hfs := newFlags("hub", "", io.Discard)
		f.register(hfs, "", hub.DefaultHTTPAddr)
		hfs.Parse(rest)
		cfg := f.config(io.Discard)
		if err := cfg.Validate(); err != nil {
			t.Errorf("service %s: %v", name, err)
		}
	case "bridge":
		path := svc.hostFile(t, fs.Lookup("config").Value.String())
		cfg, err := bridge.LoadConfig(path)
		if err != nil {
			t.Fatalf("service %s: %v", name, err)
		}
		for _, a := range cfg.Agents {
			if a.Harness != "demo" { // the image has no agent CLIs
				t.Errorf("service %s: agent %s uses harness %s, which cannot run in the image", name, a.Name, a.Harness)
			}
		}
	}
}

// checkNATSService loads the service's nats-server command line the way
// nats-server does, with the repository's deploy/nats.conf in place of the
// mounted one and freshly generated secrets beside it.
func checkNATSService(t *testing.T, name string, svc composeService, args []string) {
	i := slices.Index(args, "-c")
	if i < 0 || i+1 >= len(args) {
		t.Errorf("service %s: nats-server without -c", name)
		return
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	if err := os.Symlink(svc.hostFile(t, args[i+1]), conf); err != nil {
		t.Fatal(err)
	}
	if _, err := hub.GenerateNATSSecrets(filepath.Join(dir, "secrets")); err != nil {
		t.Fatal(err)
	}
	args = slices.Clone(args)
	args[i+1] = conf
	for k, v := range svc.Environment {
		t.Setenv(k, v)
	}
	fs := flag.NewFlagSet("nats-server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts, err := server.ConfigureOptions(fs, args, func() {}, func() {}, func() {})
	if err != nil {
		t.Errorf("service %s: %v", name, err)
		return
	}
	if opts.AuthCallout == nil || !opts.JetStream || !opts.Cluster.NoAdvertise || opts.Websocket.Port == 0 || len(opts.Routes) != 3 || opts.ServerName != name {
		t.Errorf("service %s: callout %v, JetStream %v, no_advertise %v, websocket port %d, %d routes, name %q",
			name, opts.AuthCallout != nil, opts.JetStream, opts.Cluster.NoAdvertise, opts.Websocket.Port, len(opts.Routes), opts.ServerName)
	}
}
