// Package deploy holds the files a deployment is made from, embedded so
// the binary carries the canonical copy: nats.conf, the configuration
// every NATS node of a cluster shares (wheelhouse bench runs a local
// cluster from it). It imports nothing.
package deploy

import _ "embed"

// NATSConf is nats.conf.
//
//go:embed nats.conf
var NATSConf []byte
