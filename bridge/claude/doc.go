// Package claude owns the Claude Code harness adapters: Launched (the bridge
// runs `claude -p` in stream-json mode and answers its permission prompts
// through the approval gate) and Attached (the owner's own interactive
// session, steered through a PreToolUse/Stop hook side channel), plus the hook
// entry point (RunHook), its installer, doctor checks and benchmark.
//
// The hook process itself and the side channel files live in the subpackage
// claudehook, which uses the standard library alone so a hook binary starts
// fast. This package imports bridge, claudehook and the root wheelhouse
// package; it must not import web, room or hub code.
package claude
