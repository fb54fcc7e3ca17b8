package codex

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	wheelhouse "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// Defaults for the agent's [options].
const (
	DefaultBinary         = "codex"
	DefaultApprovalPolicy = "untrusted"
	DefaultSandbox        = "workspace-write"
)

// Option keys read from AgentConfig.Options.
const (
	OptCodexHome      = "codex_home"      // CODEX_HOME for the process
	OptApprovalPolicy = "approval_policy" // untrusted | on-request | never
	OptSandbox        = "sandbox"         // read-only | workspace-write | danger-full-access
	OptModel          = "model"           // model name passed to thread/start
	OptStrictConfig   = "strict_config"   // "true": pass --strict-config
)

var (
	approvalPolicies = []string{"untrusted", "on-request", "never"}
	sandboxModes     = []string{"read-only", "workspace-write", "danger-full-access"}
)

// settings is an AgentConfig resolved for codex.
type settings struct {
	binary         string
	dir            string // absolute working directory (thread cwd)
	env            []string
	codexHome      string
	approvalPolicy string
	sandbox        string // the sandbox codex gets (see effectiveSandbox)
	model          string
	strictConfig   bool
	// configuredSandbox is the sandbox option as written ("" if unset).
	configuredSandbox string
}

// owner is the policy of the owner's own turns.
func (s settings) owner() policy { return policy{approval: s.approvalPolicy, sandbox: s.sandbox} }

// effectiveSandbox is the sandbox codex runs with under approval: under
// untrusted none at all (see strictPolicy for why), else the configured one.
func effectiveSandbox(approval, configured string) string {
	if approval == "untrusted" {
		return "danger-full-access"
	}
	return configured
}

func resolve(a bridge.AgentConfig) (settings, error) {
	s := settings{
		binary:         a.Binary,
		approvalPolicy: DefaultApprovalPolicy,
		sandbox:        DefaultSandbox,
	}
	if s.binary == "" {
		s.binary = DefaultBinary
	}
	for k, v := range a.Options {
		switch k {
		case OptCodexHome:
			s.codexHome = v
		case OptApprovalPolicy:
			s.approvalPolicy = v
		case OptSandbox:
			s.sandbox, s.configuredSandbox = v, v
		case OptModel:
			s.model = v
		case OptStrictConfig:
			s.strictConfig = v == "true" || v == "1" || v == "yes"
		default:
			return s, wheelhouse.Errorf(wheelhouse.EInvalid,
				"agent %q: unknown codex option %q (known: codex_home, approval_policy, sandbox, model, strict_config)", a.Name, k)
		}
	}
	if !slices.Contains(approvalPolicies, s.approvalPolicy) {
		return s, wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: approval_policy %q is not one of %s",
			a.Name, s.approvalPolicy, strings.Join(approvalPolicies, ", "))
	}
	if !slices.Contains(sandboxModes, s.sandbox) {
		return s, wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: sandbox %q is not one of %s",
			a.Name, s.sandbox, strings.Join(sandboxModes, ", "))
	}
	s.sandbox = effectiveSandbox(s.approvalPolicy, s.sandbox)
	var err error
	if s.dir, err = absPath(a.Dir); err != nil {
		return s, wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: dir %q: %v", a.Name, a.Dir, err)
	}
	if s.codexHome != "" {
		if s.codexHome, err = absPath(s.codexHome); err != nil {
			return s, wheelhouse.Errorf(wheelhouse.EInvalid, "agent %q: codex_home: %v", a.Name, err)
		}
	}
	s.env = childEnv(os.Environ(), a.Env, s.codexHome)
	return s, nil
}

// args is the command line after the binary.
func (s settings) args() []string {
	args := []string{"app-server"}
	if s.strictConfig {
		args = append(args, "--strict-config")
	}
	return append(args, "--listen", "stdio://")
}

// absPath makes p absolute, expanding a leading "~/"; "" means the current
// directory.
func absPath(p string) (string, error) {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		p = filepath.Join(home, rest)
	}
	if p == "" {
		p = "."
	}
	return filepath.Abs(p)
}

// strippedEnvPrefixes are parent variables the codex process never inherits:
// API keys and codex settings must come from the agent's own config, and the
// bridge's own settings are none of the agent's business.
var strippedEnvPrefixes = []string{"OPENAI_", "CODEX_", "WHEELHOUSE_", "RUST_LOG"}

// childEnv is parent minus the stripped prefixes, then RUST_LOG=warn, then
// the agent's env, then CODEX_HOME from the options (if set).
func childEnv(parent []string, extra map[string]string, codexHome string) []string {
	env := make([]string, 0, len(parent)+len(extra)+2)
	for _, kv := range parent {
		name, _, _ := strings.Cut(kv, "=")
		if hasAnyPrefix(name, strippedEnvPrefixes) {
			continue
		}
		env = append(env, kv)
	}
	set := map[string]string{"RUST_LOG": "warn"}
	for k, v := range extra {
		set[k] = v
	}
	if codexHome != "" {
		set["CODEX_HOME"] = codexHome
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = dropVar(env, k)
		env = append(env, k+"="+set[k])
	}
	return env
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func dropVar(env []string, name string) []string {
	out := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
