package openai

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// Kind is the harness name in the bridge config.
const Kind = "openai"

// Option keys read from AgentConfig.Options.
const (
	OptBaseURL        = "base_url"        // the API base, ending in /v1 (required)
	OptModel          = "model"           // the model name the endpoint serves (required)
	OptAPIKeyEnv      = "api_key_env"     // name of the environment variable holding the API key
	OptTemperature    = "temperature"     // 0 to 2; default: the endpoint's
	OptContextTokens  = "context_tokens"  // the model's context window, in tokens
	OptSystemPrompt   = "system_prompt"   // added to the built-in system prompt
	OptTools          = "tools"           // "all", "read-only", "none" or a comma list of tool names
	OptMaxSteps       = "max_steps"       // model calls per turn
	OptCommandTimeout = "command_timeout" // run_command's limit
	OptOutputCap      = "output_cap"      // bytes of one tool result the model sees
	OptStateDir       = "state_dir"       // where the conversation is kept
	OptStreamUsage    = "stream_usage"    // "false": do not send stream_options.include_usage
	OptIdleTimeout    = "idle_timeout"    // longest wait for the next bytes of a model stream
)

var knownOptions = []string{OptBaseURL, OptModel, OptAPIKeyEnv, OptTemperature, OptContextTokens, OptSystemPrompt, OptTools,
	OptMaxSteps, OptCommandTimeout, OptOutputCap, OptStateDir, OptStreamUsage, OptIdleTimeout}

// Defaults for the options.
const (
	DefaultContextTokens  = 16384
	DefaultMaxSteps       = 25
	DefaultCommandTimeout = 2 * time.Minute
	DefaultOutputCap      = 16 << 10
	DefaultIdleTimeout    = 5 * time.Minute
)

// Limits on the options.
const (
	minContextTokens  = 1024
	maxContextTokens  = 10_000_000
	maxMaxSteps       = 1000
	minOutputCap      = 1 << 10
	maxOutputCap      = 1 << 20
	maxCommandTimeout = 24 * time.Hour
	maxSystemPrompt   = 64 << 10
)

// Config is an agent's options, checked.
type Config struct {
	Name           string
	Dir            string // absolute, symlinks resolved; the tools work only inside it
	DirAsGiven     string // absolute, as configured (absolute paths under it are accepted too)
	BaseURL        string // without a trailing slash
	Model          string
	APIKeyEnv      string
	APIKey         string // read from APIKeyEnv at New; never from the config file
	Temperature    *float64
	ContextTokens  int
	SystemPrompt   string
	Tools          []string // in the order they are offered
	MaxSteps       int
	CommandTimeout time.Duration
	OutputCap      int
	StateDir       string
	StreamUsage    bool
	IdleTimeout    time.Duration
	Env            map[string]string // extra environment for run_command
}

var (
	envNameRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	agentNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// ParseConfig reads and checks an agent's options. lookupEnv reads the
// bridge's environment (os.LookupEnv outside tests).
func ParseConfig(a bridge.AgentConfig, lookupEnv func(string) (string, bool)) (Config, error) {
	c := Config{Name: a.Name, ContextTokens: DefaultContextTokens, MaxSteps: DefaultMaxSteps, CommandTimeout: DefaultCommandTimeout,
		OutputCap: DefaultOutputCap, StreamUsage: true, IdleTimeout: DefaultIdleTimeout, Tools: slices.Clone(allTools), Env: a.Env}
	bad := func(format string, args ...any) error {
		return wh.Errorf(wh.EInvalid, "agent %q: %s", a.Name, fmt.Sprintf(format, args...))
	}
	o := a.Options
	for k := range o {
		if k == "api_key" {
			return c, bad("do not put the API key in the config file: put it in an environment variable of the bridge and name that variable with %s", OptAPIKeyEnv)
		}
		if !slices.Contains(knownOptions, k) {
			return c, bad("unknown openai option %q (known: %s)", k, strings.Join(knownOptions, ", "))
		}
	}
	if len(a.Command) > 0 || a.Binary != "" {
		return c, bad("the openai harness runs no program: leave command and binary out")
	}

	var err error
	if c.BaseURL, err = checkBaseURL(o[OptBaseURL]); err != nil {
		return c, bad("%s: %v", OptBaseURL, err)
	}
	c.Model = strings.TrimSpace(o[OptModel])
	if c.Model == "" {
		return c, bad("%s is required: the model name the endpoint serves (for Ollama, e.g. \"qwen3:8b\")", OptModel)
	}
	if v, ok := o[OptAPIKeyEnv]; ok {
		if !envNameRE.MatchString(v) {
			return c, bad("%s = %q is not an environment variable name", OptAPIKeyEnv, v)
		}
		key, set := lookupEnv(v)
		if !set || strings.TrimSpace(key) == "" {
			return c, bad("%s names %s, but the bridge's environment has no value for it", OptAPIKeyEnv, v)
		}
		c.APIKeyEnv, c.APIKey = v, strings.TrimSpace(key)
	}
	if v, ok := o[OptTemperature]; ok {
		t, err := strconv.ParseFloat(v, 64)
		if err != nil || t < 0 || t > 2 {
			return c, bad("%s = %q: want a number from 0 to 2", OptTemperature, v)
		}
		c.Temperature = &t
	}
	if c.ContextTokens, err = intOption(o, OptContextTokens, DefaultContextTokens, minContextTokens, maxContextTokens); err != nil {
		return c, bad("%v", err)
	}
	if c.MaxSteps, err = intOption(o, OptMaxSteps, DefaultMaxSteps, 1, maxMaxSteps); err != nil {
		return c, bad("%v", err)
	}
	if c.OutputCap, err = intOption(o, OptOutputCap, DefaultOutputCap, minOutputCap, maxOutputCap); err != nil {
		return c, bad("%v", err)
	}
	if c.CommandTimeout, err = durationOption(o, OptCommandTimeout, DefaultCommandTimeout); err != nil {
		return c, bad("%v", err)
	}
	if c.IdleTimeout, err = durationOption(o, OptIdleTimeout, DefaultIdleTimeout); err != nil {
		return c, bad("%v", err)
	}
	c.SystemPrompt = o[OptSystemPrompt]
	if len(c.SystemPrompt) > maxSystemPrompt {
		return c, bad("%s is longer than %d bytes", OptSystemPrompt, maxSystemPrompt)
	}
	if v, ok := o[OptTools]; ok {
		if c.Tools, err = parseTools(v); err != nil {
			return c, bad("%s: %v", OptTools, err)
		}
	}
	if v, ok := o[OptStreamUsage]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, bad("%s = %q: want true or false", OptStreamUsage, v)
		}
		c.StreamUsage = b
	}

	if strings.TrimSpace(a.Dir) == "" {
		return c, bad("dir is required: the tools work inside the agent's directory and nowhere else")
	}
	if c.DirAsGiven, err = absPath(a.Dir); err != nil {
		return c, bad("dir %q: %v", a.Dir, err)
	}
	if c.Dir, err = filepath.EvalSymlinks(c.DirAsGiven); err != nil {
		return c, bad("dir %q: %v", a.Dir, err)
	}
	if st, err := os.Stat(c.Dir); err != nil || !st.IsDir() {
		return c, bad("dir %q is not a directory", a.Dir)
	}
	if v := o[OptStateDir]; v != "" {
		if c.StateDir, err = absPath(v); err != nil {
			return c, bad("%s %q: %v", OptStateDir, v, err)
		}
	} else {
		if !agentNameRE.MatchString(a.Name) {
			return c, bad("the name cannot be a directory name; set %s", OptStateDir)
		}
		base, err := stateHome(lookupEnv)
		if err != nil {
			return c, bad("no state directory (%v); set %s", err, OptStateDir)
		}
		c.StateDir = filepath.Join(base, "wheelhouse", "agents", a.Name)
	}
	if within(c.Dir, c.StateDir) {
		return c, bad("%s %q is inside the agent's dir: the model could read and rewrite its own history; put it elsewhere", OptStateDir, c.StateDir)
	}
	return c, nil
}

// checkBaseURL accepts http(s)://host[:port]/path, without credentials,
// query or fragment, and returns it without a trailing slash.
func checkBaseURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fmt.Errorf("required: the API base of the endpoint, e.g. http://localhost:11434/v1 (Ollama)")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %v", s, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%q: want an http:// or https:// URL", s)
	case u.Host == "":
		return "", fmt.Errorf("%q has no host", s)
	case u.User != nil:
		return "", fmt.Errorf("%q carries credentials: put the key in an environment variable and name it with %s", u.Redacted(), OptAPIKeyEnv)
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%q: leave out the query and fragment", s)
	case strings.Trim(u.Path, "/") == "":
		return "", fmt.Errorf("%q has no path: OpenAI-compatible servers serve the API under /v1, e.g. %s/v1", s, strings.TrimRight(s, "/"))
	}
	return strings.TrimRight(s, "/"), nil
}

func intOption(o map[string]string, key string, def, lo, hi int) (int, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s = %q: want a whole number from %d to %d", key, v, lo, hi)
	}
	return n, nil
}

func durationOption(o map[string]string, key string, def time.Duration) (time.Duration, error) {
	v, ok := o[key]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d <= 0 || d > maxCommandTimeout {
		return 0, fmt.Errorf("%s = %q: want a duration such as \"90s\" or \"5m\" (at most 24h)", key, v)
	}
	return d, nil
}

// parseTools reads the tools option: "all", "read-only", "none", or names.
func parseTools(v string) ([]string, error) {
	switch strings.TrimSpace(v) {
	case "all":
		return slices.Clone(allTools), nil
	case "read-only":
		return slices.Clone(readOnlyTools), nil
	case "none", "":
		return []string{}, nil
	}
	var out []string
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(allTools, name) {
			return nil, fmt.Errorf("unknown tool %q (known: %s; or all, read-only, none)", name, strings.Join(allTools, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	// Offer them in the canonical order, whatever the config's order.
	slices.SortFunc(out, func(a, b string) int { return slices.Index(allTools, a) - slices.Index(allTools, b) })
	return out, nil
}

// absPath makes p absolute, expanding a leading "~/".
func absPath(p string) (string, error) {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		p = filepath.Join(home, rest)
	}
	return filepath.Abs(p)
}

// stateHome is $XDG_STATE_HOME, else ~/.local/state.
func stateHome(lookupEnv func(string) (string, bool)) (string, error) {
	if v, ok := lookupEnv("XDG_STATE_HOME"); ok && filepath.IsAbs(v) {
		return v, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state"), nil
}

// within reports whether p is dir or below it (both absolute and clean).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
