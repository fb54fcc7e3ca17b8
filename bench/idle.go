package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// IdleCost is what a server holds for its idle sockets, measured in its own
// process after a garbage collection.
type IdleCost struct {
	RSSPerSocket        float64 `json:"rssBytesPerSocket"`
	HeapPerSocket       float64 `json:"heapBytesPerSocket"` // Go heap in use
	StackPerSocket      float64 `json:"stackBytesPerSocket"`
	GoroutinesPerSocket float64 `json:"goroutinesPerSocket"`
	DialSeconds         float64 `json:"dialSeconds"` // to open them all, each past its ready frame
}

// IdleResult is the idle-socket run.
type IdleResult struct {
	Sockets int      `json:"sockets"`
	People  int      `json:"people"`
	Hub     IdleCost `json:"hub"`
	Raw     IdleCost `json:"raw"`
	Ratio   float64  `json:"ratioRss"`
	FDLimit string   `json:"fdLimit"` // what the run did about the open-files limit
}

func (r *IdleResult) String() string {
	kib := func(b float64) string { return fmt.Sprintf("%.1f KiB", b/1024) }
	return fmt.Sprintf("Idle authenticated WebSockets (%d sockets of %d people; server in a child process, clients in this one; %s)\n"+
		"  hub       %s RSS (%s heap, %s stacks), %.2f goroutines per socket (opened in %.1f s)\n"+
		"  baseline  %s RSS (%s heap, %s stacks), %.2f goroutines per socket: a bare coder/websocket server, one reader each\n"+
		"  ratio RSS %.2f×\n",
		r.Sockets, r.People, r.FDLimit, kib(r.Hub.RSSPerSocket), kib(r.Hub.HeapPerSocket), kib(r.Hub.StackPerSocket), r.Hub.GoroutinesPerSocket, r.Hub.DialSeconds,
		kib(r.Raw.RSSPerSocket), kib(r.Raw.HeapPerSocket), kib(r.Raw.StackPerSocket), r.Raw.GoroutinesPerSocket, r.Ratio)
}

// IdleSockets opens n authenticated live-event sockets to a hub running in
// a child process and reports what each costs it, beside a bare
// coder/websocket server holding as many.
func IdleSockets(ctx context.Context, n int, _ string) (*IdleResult, error) {
	limit, err := raiseFDLimit(uint64(n) + 1024)
	if err != nil {
		return nil, err
	}
	people := min(n, 100)
	dir, err := os.MkdirTemp("", "wheelhouse-bench-idle-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	e, err := newEnv(ctx, envOptions{Dir: dir})
	if err != nil {
		return nil, err
	}
	ps, err := e.addPeople(ctx, "i", people)
	if err == nil {
		err = e.addMembers(ctx, "bench", ps)
	}
	e.close()
	if err != nil {
		return nil, err
	}
	res := &IdleResult{Sockets: n, People: people, FDLimit: limit}
	if res.Raw, err = idleCost(ctx, "raw", n, func(i int) string { return "" }); err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	if res.Hub, err = idleCost(ctx, "hub", n, func(i int) string { return ps[i%people].token }, childDirEnv+"="+dir); err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	res.Ratio = ratio(res.Hub.RSSPerSocket, res.Raw.RSSPerSocket)
	return res, nil
}

func idleCost(ctx context.Context, role string, n int, token func(i int) string, env ...string) (IdleCost, error) {
	c, err := startChild(role, env...)
	if err != nil {
		return IdleCost{}, err
	}
	defer c.stop()
	url := strings.Replace(c.URL, "http", "ws", 1)
	if role == "hub" {
		url += "/api/v1/events"
	}
	// A few sockets first, so what the first connection sets up once is
	// not counted per socket.
	warm, err := dialSockets(ctx, func(i int) (string, string) { return url, token(i) }, min(n, 10), 0)
	if err != nil {
		return IdleCost{}, err
	}
	defer warm.close()
	before, err := c.stats()
	if err != nil {
		return IdleCost{}, err
	}
	start := time.Now()
	ss, err := dialSockets(ctx, func(i int) (string, string) { return url, token(i) }, n, 0)
	if err != nil {
		return IdleCost{}, err
	}
	defer ss.close()
	dial := time.Since(start)
	after, err := c.stats()
	if err != nil {
		return IdleCost{}, err
	}
	per := func(a, b uint64) float64 { return (float64(a) - float64(b)) / float64(n) }
	return IdleCost{RSSPerSocket: per(after.RSS, before.RSS), HeapPerSocket: per(after.Heap, before.Heap), StackPerSocket: per(after.Stack, before.Stack),
		GoroutinesPerSocket: float64(after.Goroutines-before.Goroutines) / float64(n), DialSeconds: dial.Seconds()}, nil
}
