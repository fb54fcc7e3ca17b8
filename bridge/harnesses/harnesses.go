// Package harnesses lists every harness adapter by kind, for the bridge
// command and tests. It imports the adapters; bridge itself does not.
package harnesses

import (
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/bridge/claude"
	"github.com/wheelhouse-dev/wheelhouse/bridge/codex"
	"github.com/wheelhouse-dev/wheelhouse/bridge/demo"
	"github.com/wheelhouse-dev/wheelhouse/bridge/execagent"
	"github.com/wheelhouse-dev/wheelhouse/bridge/openai"
)

// All returns the factories by kind.
func All() map[string]bridge.Factory {
	return map[string]bridge.Factory{
		demo.Kind:       func(d bridge.Deps) (bridge.Harness, error) { return demo.New(d) },
		execagent.Kind:  func(d bridge.Deps) (bridge.Harness, error) { return execagent.New(d) },
		"codex":         func(d bridge.Deps) (bridge.Harness, error) { return codex.New(d) },
		"claude":        func(d bridge.Deps) (bridge.Harness, error) { return claude.NewLaunched(d) },
		"claude-attach": func(d bridge.Deps) (bridge.Harness, error) { return claude.NewAttached(d) },
		openai.Kind:     func(d bridge.Deps) (bridge.Harness, error) { return openai.New(d) },
	}
}
