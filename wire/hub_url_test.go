package wire

import (
	"strings"
	"testing"
)

func TestNATSURL(t *testing.T) {
	for _, tc := range []struct{ hub, want, err string }{
		{"https://chat.example.com", "wss://chat.example.com/nats", ""},
		{"https://chat.example.com:8443/", "wss://chat.example.com:8443/nats", ""},
		{"http://127.0.0.1:8080", "ws://127.0.0.1:8080/nats", ""},
		{"http://[::1]:8080", "ws://[::1]:8080/nats", ""},
		{"nats://127.0.0.1:4222", "", "not a hub URL"},
		{"chat.example.com", "", "not a hub URL"},
		{"https://chat.example.com/wheelhouse", "", "only a scheme, a host and a port"},
		{"https://u:p@chat.example.com", "", "only a scheme, a host and a port"},
		{"https://chat.example.com?x=1", "", "only a scheme, a host and a port"},
	} {
		got, err := NATSURL(tc.hub)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %q %v, want error %q", tc.hub, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q %v, want %q", tc.hub, got, err, tc.want)
		}
	}
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:80": true, "127.0.0.1": true, "127.1.2.3:9": true, "[::1]:8080": true, "::1": true,
		"0.0.0.0": false, "10.0.0.1": false, "chat.example.com": false, "localhost.example.com": false, "[::]:80": false,
	} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v", host, got)
		}
	}
}

func FuzzParseHubURL(f *testing.F) {
	for _, s := range []string{"https://chat.example.com", "http://127.0.0.1:8080/", "https://[::1]:1/x", "ws://a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseHubURL(s)
		if err != nil {
			return
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
			t.Fatalf("%q accepted as %#v", s, u)
		}
		n, err := NATSURL(u.String())
		if err != nil || !strings.HasSuffix(n, "://"+u.Host+NATSPath) {
			t.Fatalf("%q: NATS URL %q %v", s, n, err)
		}
	})
}
