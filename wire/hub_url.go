package wire

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// NATSPath is where a hub's HTTP(S) listener carries NATS over WebSocket
// for bridges. (nats-server treats a path ending in "leafnode" or "mqtt"
// as another protocol: never use one.)
const NATSPath = "/nats"

// ParseHubURL checks a hub's base URL: http or https, a host, no path,
// query or user info. It returns the URL without a trailing slash.
func ParseHubURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(s), "/"))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%q is not a hub URL: want https://host[:port] (or http:// on this machine)", s)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("%q: a hub URL has only a scheme, a host and a port", s)
	}
	u.Path, u.RawPath = "", ""
	return u, nil
}

// NATSURL is where a bridge reaches NATS through the hub at hubURL:
// wss://host/nats for https, ws://host/nats for http.
func NATSURL(hubURL string) (string, error) {
	u, err := ParseHubURL(hubURL)
	if err != nil {
		return "", err
	}
	scheme := "wss"
	if u.Scheme == "http" {
		scheme = "ws"
	}
	return scheme + "://" + u.Host + NATSPath, nil
}

// IsLoopbackHost reports whether host (a name or an address, with or
// without a port) is this machine's loopback: localhost, 127.0.0.0/8, ::1.
func IsLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
