package claude

import (
	"context"
	"io"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

// EnvHookDisable, set to 1 in a Claude Code process's environment, turns the
// hook into a no-op there (the Launched harness sets it).
const EnvHookDisable = claudehook.EnvDisable

// RunHook is the Claude Code hook entry point (`wheelhouse hook claude`): it
// reads one hook event on stdin, answers on stdout and returns the exit code
// (always 0). stateDir is the shared state root ("" = from env). See
// claudehook.Run and docs/harness-claude.md.
//
// A hook binary that links only this function starts faster than one that
// links the whole bridge: a dedicated hook command can import
// bridge/claude/claudehook, which uses the standard library alone.
func RunHook(ctx context.Context, stdin io.Reader, stdout io.Writer, env []string, stateDir string) int {
	return claudehook.Run(ctx, stdin, stdout, env, stateDir)
}
