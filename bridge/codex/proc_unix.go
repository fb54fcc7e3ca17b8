//go:build unix

package codex

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the process in its own process group, so killGroup also
// reaches the commands codex runs, and a terminal's Ctrl-C reaches only the
// bridge (which then closes its agents in order).
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process and everything in its group.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
