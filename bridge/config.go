package bridge

import (
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// AgentConfig declares one agent in the bridge config file.
type AgentConfig struct {
	Name    string            `toml:"name"`
	Harness string            `toml:"harness"` // demo, exec, codex, claude, claude-attach
	Dir     string            `toml:"dir"`     // working directory / project dir
	Command []string          `toml:"command"` // exec: argv; an arg "{prompt}" is replaced by the text, else the text goes to stdin
	Binary  string            `toml:"binary"`  // codex/claude: path to the binary (default from PATH)
	Env     map[string]string `toml:"env"`     // extra environment for the harness process
	Options map[string]string `toml:"options"` // harness-specific (codex: approval_policy, sandbox, codex_home, model)
	Policy  wire.Policy       `toml:"-"`
}
