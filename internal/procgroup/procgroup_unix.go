//go:build unix

// Package procgroup runs a harness's child in a process group of its own,
// so stopping it also stops what it started (the commands an agent runs),
// and a terminal's Ctrl-C reaches only the bridge, which then closes its
// agents in order.
package procgroup

import (
	"os/exec"
	"syscall"
)

// Own makes cmd start in its own process group.
func Own(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// Kill kills cmd's process and everything in its group.
func Kill(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}

// Signal asks cmd's whole process group to stop (SIGTERM), or with kill
// stops it (SIGKILL).
func Signal(cmd *exec.Cmd, kill bool) error {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}
