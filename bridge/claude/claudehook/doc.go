// Package claudehook is the Claude Code hook process (Run, behind
// claude.RunHook and `wheelhouse hook claude`) and the side channel it shares
// with the claude-attach harness: note files in <project>/.wheelhouse and the
// permission socket. Claude Code starts it on every tool call, so it imports
// the standard library only; it must not import anything of ours.
package claudehook
