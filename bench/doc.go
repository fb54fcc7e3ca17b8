// Package bench is the performance suite behind `wheelhouse bench` and the
// go test benchmarks: each product figure is measured beside a baseline run
// in the same process (raw JetStream publish, raw coder/websocket fan-out,
// raw NATS request/reply) and reported as a ratio. It imports hub, bridge
// and testhub-free wiring of its own; nothing imports it but cmd.
package bench
