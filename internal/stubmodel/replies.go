package stubmodel

import "sync"

// replies answers a stub server's requests: its responder first (if set
// and it answers), then the script in order, then the fallback.
type replies[Req, Rep any] struct {
	mu       sync.Mutex
	script   []Rep
	fallback Rep
	respond  func(Req) (Rep, bool)
}

func (p *replies[Req, Rep]) push(rs ...Rep) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.script = append(p.script, rs...)
}

func (p *replies[Req, Rep]) setFallback(r Rep) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fallback = r
}

func (p *replies[Req, Rep]) setResponder(f func(Req) (Rep, bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.respond = f
}

// take records a request (record runs under the lock, so requests are
// numbered in the order they take replies) and returns it with its reply,
// and whether that reply is the fallback.
func (p *replies[Req, Rep]) take(record func() Req) (req Req, rep Rep, fallback bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	req = record()
	if p.respond != nil {
		if r, ok := p.respond(req); ok {
			return req, r, false
		}
	}
	if len(p.script) > 0 {
		rep, p.script = p.script[0], p.script[1:]
		return req, rep, false
	}
	return req, p.fallback, true
}
