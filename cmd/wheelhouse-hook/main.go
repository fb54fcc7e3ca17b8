// Command wheelhouse-hook is the fast form of `wheelhouse hook claude`: the
// same Claude Code hook, in a binary that links only the hook (package
// claudehook, standard library only), so a tool call pays ~3 ms for it
// instead of the full wheelhouse binary's start-up. `wheelhouse hook claude
// --install` wires this binary when it sits next to wheelhouse.
package main

import (
	"context"
	"os"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] != "claude" {
		os.Stderr.WriteString("usage: wheelhouse-hook [claude]   (Claude Code runs this on hook events)\n")
		os.Exit(0) // fail open: never block a tool call
	}
	// The state root (notes, key, sessions) comes from the environment:
	// WHEELHOUSE_STATE_DIR, $XDG_STATE_HOME/wheelhouse or ~/.local/state/wheelhouse.
	os.Exit(claudehook.Run(context.Background(), os.Stdin, os.Stdout, os.Environ(), ""))
}
