//go:build !unix

package execagent

import "os/exec"

func ownGroup(cmd *exec.Cmd) {}

// signalGroup kills the process; without process groups, its children may
// outlive it.
func signalGroup(cmd *exec.Cmd, kill bool) error { return cmd.Process.Kill() }
