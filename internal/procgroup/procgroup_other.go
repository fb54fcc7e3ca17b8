//go:build !unix

// Package procgroup runs a harness's child in a process group of its own
// where the system has them; elsewhere it kills the process alone.
package procgroup

import "os/exec"

// Own does nothing here.
func Own(*exec.Cmd) {}

// Kill kills cmd's process.
func Kill(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// Signal kills the process; without process groups, its children may
// outlive it.
func Signal(cmd *exec.Cmd, kill bool) error { return cmd.Process.Kill() }
