// Command hookmain is the hook binary the tests wire into Claude Code: the
// entry point `wheelhouse hook claude` calls, in a binary that links only the
// hook (package claudehook, standard library only) so it starts fast.
package main

import (
	"context"
	"os"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

func main() {
	os.Exit(claudehook.Run(context.Background(), os.Stdin, os.Stdout, os.Environ(), ""))
}
