package claude

import (
	"sync"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// eventQueue hands events to the bridge's sink in the order they were pushed,
// from one goroutine, so a sink that calls back into the harness (for example
// to start a queued follow-up when a turn ends) never deadlocks on a harness
// lock. Push is cheap and never blocks.
type eventQueue struct {
	sink bridge.Sink

	mu     sync.Mutex
	q      []bridge.Event
	closed bool
	wake   chan struct{}
	done   chan struct{}
}

func newEventQueue(sink bridge.Sink) *eventQueue {
	e := &eventQueue{sink: sink, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go e.run()
	return e
}

func (e *eventQueue) push(evs ...bridge.Event) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.q = append(e.q, evs...)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *eventQueue) run() {
	defer close(e.done)
	for {
		e.mu.Lock()
		batch := e.q
		e.q = nil
		closed := e.closed
		e.mu.Unlock()
		for _, ev := range batch {
			if e.sink != nil {
				e.sink(ev)
			}
		}
		if closed && len(batch) == 0 {
			return
		}
		if len(batch) == 0 {
			<-e.wake
		}
	}
}

// close stops accepting events, delivers what is queued and returns when the
// sink has seen the last one.
func (e *eventQueue) close() {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	<-e.done
}
