package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"time"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/local"
)

// The owner's commands find the bridge of `wheelhouse up` as well as a
// paired `wheelhouse bridge run`: up keeps its credentials (and, when the
// standard socket is taken, its control socket) in its data directory.

// controlSocket is --socket if given, else the first of the standard
// socket and up's where a bridge answers, else the standard one.
func controlSocket(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	std := bridge.DefaultControlSocket()
	for _, p := range []string{std, filepath.Join(defaultDataDir(), local.SocketFile)} {
		if c, err := net.DialTimeout("unix", p, 500*time.Millisecond); err == nil {
			c.Close()
			return p
		}
	}
	return std
}

// control sends one request to the bridge's control socket.
func control(ctx context.Context, socketFlag string, req bridge.ControlRequest) (*bridge.ControlReply, error) {
	path := controlSocket(socketFlag)
	rep, err := bridge.Control(ctx, path, req)
	if err != nil && socketFlag == "" && wh.ErrorCode(err) == wh.EUnavailable {
		return rep, wh.Errorf(wh.EUnavailable, "no bridge is running here: nothing answers on %s, nor on wheelhouse up's %s; start one (wheelhouse up, or wheelhouse bridge run), or pass --socket",
			path, filepath.Join(defaultDataDir(), local.SocketFile))
	}
	return rep, err
}

// credentialsPath is --credentials if given, else the paired bridge's
// credentials, else those of `wheelhouse up` (fromUp), else the standard
// path (for the error message).
func credentialsPath(flagValue string) (path string, fromUp bool) {
	if flagValue != "" {
		return flagValue, false
	}
	std := bridge.DefaultCredentialsPath()
	if _, err := os.Stat(std); err == nil {
		return std, false
	}
	up := filepath.Join(defaultDataDir(), local.CredentialsFile)
	if _, err := os.Stat(up); err == nil {
		return up, true
	}
	return std, false
}
