package openai

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseConfig(t *testing.T) {
	dir := t.TempDir()
	state := t.TempDir()
	base := func(extra map[string]string) bridge.AgentConfig {
		o := map[string]string{"base_url": "http://127.0.0.1:11434/v1/", "model": "qwen3:8b"}
		for k, v := range extra {
			o[k] = v
		}
		return bridge.AgentConfig{Name: "local", Harness: Kind, Dir: dir, Options: o}
	}
	env := envOf(map[string]string{"XDG_STATE_HOME": state, "MY_KEY": " sk-secret \n", "EMPTY": ""})

	t.Run("Defaults", func(t *testing.T) {
		c, err := ParseConfig(base(nil), env)
		if err != nil {
			t.Fatal(err)
		}
		real, _ := filepath.EvalSymlinks(dir)
		if c.BaseURL != "http://127.0.0.1:11434/v1" || c.Model != "qwen3:8b" || c.Dir != real || c.APIKey != "" ||
			c.ContextTokens != DefaultContextTokens || c.MaxSteps != DefaultMaxSteps || c.OutputCap != DefaultOutputCap ||
			c.CommandTimeout != DefaultCommandTimeout || !c.StreamUsage || c.Temperature != nil || len(c.Tools) != 6 ||
			c.StateDir != filepath.Join(state, "wheelhouse", "agents", "local") {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("AllOptions", func(t *testing.T) {
		c, err := ParseConfig(base(map[string]string{"api_key_env": "MY_KEY", "temperature": "0.2", "context_tokens": "32768",
			"system_prompt": "Be terse.", "tools": "run_command, read_file", "max_steps": "7", "command_timeout": "30s",
			"output_cap": "4096", "state_dir": filepath.Join(state, "x"), "stream_usage": "false", "idle_timeout": "1m"}), env)
		if err != nil {
			t.Fatal(err)
		}
		if c.APIKey != "sk-secret" || *c.Temperature != 0.2 || c.ContextTokens != 32768 || c.SystemPrompt != "Be terse." ||
			strings.Join(c.Tools, ",") != "read_file,run_command" || c.MaxSteps != 7 || c.CommandTimeout != 30*time.Second ||
			c.OutputCap != 4096 || c.StateDir != filepath.Join(state, "x") || c.StreamUsage || c.IdleTimeout != time.Minute {
			t.Fatalf("%+v", c)
		}
	})
	t.Run("ToolSets", func(t *testing.T) {
		for v, want := range map[string]string{"all": strings.Join(allTools, ","), "read-only": "list_files,read_file,search_text", "none": ""} {
			c, err := ParseConfig(base(map[string]string{"tools": v}), env)
			if err != nil || strings.Join(c.Tools, ",") != want {
				t.Errorf("tools=%s: %v %v", v, c.Tools, err)
			}
		}
	})
	bad := []struct {
		name string
		a    bridge.AgentConfig
		want string
	}{
		{"ErrNoBaseURL", bridge.AgentConfig{Name: "x", Dir: dir, Options: map[string]string{"model": "m"}}, "base_url: required"},
		{"ErrBaseURLNoPath", base(map[string]string{"base_url": "http://localhost:11434"}), "has no path"},
		{"ErrBaseURLScheme", base(map[string]string{"base_url": "ftp://x/v1"}), "http:// or https://"},
		{"ErrBaseURLCredentials", base(map[string]string{"base_url": "http://u:p@x/v1"}), "carries credentials"},
		{"ErrNoModel", base(map[string]string{"model": " "}), "model is required"},
		{"ErrKeyInFile", base(map[string]string{"api_key": "sk-123"}), "do not put the API key in the config file"},
		{"ErrKeyEnvMissing", base(map[string]string{"api_key_env": "NOPE"}), "has no value for it"},
		{"ErrKeyEnvEmpty", base(map[string]string{"api_key_env": "EMPTY"}), "has no value for it"},
		{"ErrKeyEnvName", base(map[string]string{"api_key_env": "A-B"}), "not an environment variable name"},
		{"ErrTemperature", base(map[string]string{"temperature": "3"}), "from 0 to 2"},
		{"ErrContext", base(map[string]string{"context_tokens": "100"}), "context_tokens"},
		{"ErrSteps", base(map[string]string{"max_steps": "0"}), "max_steps"},
		{"ErrTimeout", base(map[string]string{"command_timeout": "soon"}), "command_timeout"},
		{"ErrOutputCap", base(map[string]string{"output_cap": "10"}), "output_cap"},
		{"ErrTool", base(map[string]string{"tools": "read_file,rm_rf"}), `unknown tool "rm_rf"`},
		{"ErrStreamUsage", base(map[string]string{"stream_usage": "maybe"}), "true or false"},
		{"ErrUnknownOption", base(map[string]string{"modle": "x"}), `unknown openai option "modle"`},
		{"ErrNoDir", bridge.AgentConfig{Name: "x", Options: map[string]string{"base_url": "http://x/v1", "model": "m"}}, "dir is required"},
		{"ErrDirMissing", bridge.AgentConfig{Name: "x", Dir: filepath.Join(dir, "nope"), Options: map[string]string{"base_url": "http://x/v1", "model": "m"}}, "dir"},
		{"ErrStateInsideDir", base(map[string]string{"state_dir": filepath.Join(dir, ".state")}), "inside the agent's dir"},
		{"ErrCommand", bridge.AgentConfig{Name: "x", Dir: dir, Command: []string{"sh"}, Options: map[string]string{"base_url": "http://x/v1", "model": "m"}}, "runs no program"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig(tc.a, env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "sk-") {
				t.Fatalf("the error shows the key: %v", err)
			}
		})
	}
}

// The example in docs/bridge.example.toml is a valid openai agent.
func TestExampleConfig(t *testing.T) {
	c, err := bridge.LoadConfig("../../docs/bridge.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range c.Agents {
		if a.Harness != Kind {
			continue
		}
		found = true
		a.Dir = t.TempDir() // the example's dir is not on this machine
		cfg, err := ParseConfig(a, envOf(map[string]string{"XDG_STATE_HOME": t.TempDir()}))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Model != "qwen3:8b" || cfg.ContextTokens != 16384 {
			t.Fatalf("%+v", cfg)
		}
	}
	if !found {
		t.Fatal("no openai agent in the example")
	}
}
