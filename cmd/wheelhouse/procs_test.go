package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// homeEnv gives a child process a home, config, data and runtime folder of
// its own, so it never touches the user's (sockets, credentials).
func homeEnv(t *testing.T) []string {
	t.Helper()
	d := t.TempDir()
	var env []string
	for _, k := range []string{"HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"} {
		p := filepath.Join(d, strings.ToLower(k))
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		env = append(env, k+"="+p)
	}
	return env
}

// runProc runs this binary as wheelhouse with env and returns its output
// and exit status.
func runProc(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(append(os.Environ(), "WHEELHOUSE_TEST_AS_MAIN=1"), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(out), 0
}

// listeningTCP lists the TCP addresses process pid listens on (Linux:
// its socket inodes in /proc/pid/fd, looked up in /proc/pid/net/tcp{,6}).
func listeningTCP(t *testing.T, pid int) []*net.TCPAddr {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var out []*net.TCPAddr
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(fs) < 10 || fs[3] != "0A" || !inodes[fs[9]] {
				continue
			}
			out = append(out, procAddr(t, fs[1]))
		}
		f.Close()
	}
	return out
}

// procAddr decodes /proc/net/tcp's HEXIP:HEXPORT (the IP in host order,
// 32-bit words).
func procAddr(t *testing.T, s string) *net.TCPAddr {
	hexIP, hexPort, _ := strings.Cut(s, ":")
	port, _ := strconv.ParseUint(hexPort, 16, 16)
	ip := make(net.IP, len(hexIP)/2)
	for i := 0; i < len(ip); i += 4 {
		w, err := strconv.ParseUint(hexIP[2*i:2*i+8], 16, 32)
		if err != nil {
			t.Fatalf("bad address %q", s)
		}
		ip[i], ip[i+1], ip[i+2], ip[i+3] = byte(w), byte(w>>8), byte(w>>16), byte(w>>24)
	}
	return &net.TCPAddr{IP: ip, Port: int(port)}
}
