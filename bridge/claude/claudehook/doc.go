// Package claudehook is the Claude Code hook process (Run, behind
// claude.RunHook, `wheelhouse hook claude` and wheelhouse-hook) and the side
// channel it shares with the claude-attach harness: signed note files and
// session records in the user's state directory, and the permission socket.
// Claude Code starts it on every tool call, so it imports the standard
// library only; it must not import anything of ours.
package claudehook
