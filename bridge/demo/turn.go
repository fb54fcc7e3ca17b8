package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
)

// intro is how the demo introduces itself in every reply.
const intro = "I'm the Wheelhouse demo agent — a scripted stand-in, no model involved."

// turn is one running turn. Agent.mu guards pending and ending.
type turn struct {
	id      string
	ctx     context.Context // ends on Interrupt or Close
	cancel  context.CancelFunc
	wake    chan struct{} // a steer arrived (capacity 1)
	pending []bridge.Input
	ending  bool // takes no more steers
}

// reply collects what the final message will say.
type reply struct {
	asked string
	read  []string
	lines []string
}

// run plays the turn's script, then reports the reply and the end.
func (a *Agent) run(t *turn, in bridge.Input) {
	defer a.running.Done()
	defer t.cancel()
	r := &reply{asked: instruction(in.Text)}
	err := a.script(t, in, r)

	a.mu.Lock()
	t.ending = true
	a.mu.Unlock()

	end := bridge.Event{Kind: bridge.EventTurnEnded, TurnID: t.id, Status: "completed"}
	if err != nil {
		end.Status, end.Text = "interrupted", "interrupted"
	} else {
		a.sink(bridge.Event{Kind: bridge.EventMessage, TurnID: t.id, Text: r.String()})
	}
	a.log.Info("turn ended", "turn", t.id, "status", end.Status)

	// Idle before the end is announced, so whoever reacts to it can start
	// the next turn at once.
	a.mu.Lock()
	if a.cur == t {
		a.cur = nil
	}
	a.mu.Unlock()
	a.sink(end)
}

// script is the turn's work: the steps, the start input's requests, and
// every steer that arrives before the turn ends. It returns the context's
// error when the turn is interrupted.
func (a *Agent) script(t *turn, in bridge.Input, r *reply) error {
	a.progress(t, fmt.Sprintf("%s Working on: %q", intro, r.asked))
	a.mu.Lock()
	names := a.files.names()
	a.mu.Unlock()
	for i := range a.steps {
		var line string
		switch {
		case i == 0:
			line = "listing files…"
		case i <= len(names):
			name := names[i-1]
			line = "reading " + name + "…"
			r.read = append(r.read, name)
		default:
			line = "thinking…"
		}
		a.progress(t, line)
		if err := a.pause(t, r); err != nil {
			return err
		}
		if i == 0 {
			// The start input's own requests run after the listing.
			if err := a.handle(t, in, r); err != nil {
				return err
			}
		}
	}
	// Take the last steers, then stop taking them, in one step: a steer is
	// either in this reply or rejected, never lost.
	for {
		a.mu.Lock()
		if len(t.pending) == 0 {
			t.ending = true
			a.mu.Unlock()
			return t.ctx.Err()
		}
		a.mu.Unlock()
		if err := a.drain(t, r); err != nil {
			return err
		}
	}
}

// pause waits one step, acknowledging steers as they arrive.
func (a *Agent) pause(t *turn, r *reply) error {
	timer := time.NewTimer(a.step)
	defer timer.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return t.ctx.Err()
		case <-t.wake:
			if err := a.drain(t, r); err != nil {
				return err
			}
		case <-timer.C:
			return a.drain(t, r)
		}
	}
}

// drain handles the steers waiting for the turn.
func (a *Agent) drain(t *turn, r *reply) error {
	for {
		if err := t.ctx.Err(); err != nil {
			return err
		}
		a.mu.Lock()
		batch := t.pending
		t.pending = nil
		a.mu.Unlock()
		if len(batch) == 0 {
			return nil
		}
		for _, in := range batch {
			sender := in.Sender
			if sender == "" {
				sender = "someone"
			}
			note := fmt.Sprintf("Noted from %s: %s", sender, instruction(in.Text))
			a.progress(t, note)
			r.lines = append(r.lines, note)
			if err := a.handle(t, in, r); err != nil {
				return err
			}
		}
	}
}

// handle carries out the requests in one input: for the demo, noting the
// files that came with it and deleting files.
func (a *Agent) handle(t *turn, in bridge.Input, r *reply) error {
	for _, note := range fileNotes(in.Text) {
		a.progress(t, note)
		r.lines = append(r.lines, note)
	}
	known := func(name string) bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		_, ok := a.files[name]
		return ok
	}
	for _, name := range deleteTargets(in.Text, known) {
		if err := a.deleteFile(t, name, r); err != nil {
			return err
		}
	}
	return nil
}

// deleteCall is exactly the call the demo runs to delete name.
func deleteCall(name string) bridge.ToolCall {
	return bridge.ToolCall{Tool: "delete_file", Args: map[string]any{"path": name}}
}

// deleteFile asks the owner, and deletes name only if the grant redeems for
// the very call it runs.
func (a *Agent) deleteFile(t *turn, name string, r *reply) error {
	a.mu.Lock()
	content, ok := a.files[name]
	a.mu.Unlock()
	if !ok {
		a.outcome(t, r, fmt.Sprintf("did not delete %s: there is no such file in my workspace", name))
		return nil
	}
	if a.gate == nil {
		a.outcome(t, r, fmt.Sprintf("did not delete %s: no approval gate is configured", name))
		return nil
	}
	a.progress(t, fmt.Sprintf("asking the owner before deleting %s…", name))
	grant, err := a.gate.Ask(t.ctx, bridge.ApprovalAsk{
		TurnID:  t.id,
		Call:    deleteCall(name),
		Summary: "delete " + name,
		Diff:    deletionDiff(name, content),
	})
	if cerr := t.ctx.Err(); cerr != nil {
		return cerr // interrupted while waiting: run nothing
	}
	if err != nil {
		a.outcome(t, r, fmt.Sprintf("did not delete %s: %v", name, err))
		return nil
	}
	if grant == nil {
		a.outcome(t, r, fmt.Sprintf("did not delete %s: the gate returned no grant", name))
		return nil
	}
	call := deleteCall(name)
	if err := grant.Redeem(call); err != nil {
		a.outcome(t, r, fmt.Sprintf("did not delete %s: %v", name, err))
		return nil
	}
	a.mu.Lock()
	_, still := a.files[name]
	delete(a.files, name)
	a.mu.Unlock()
	if !still {
		a.outcome(t, r, fmt.Sprintf("did not delete %s: it was already gone", name))
		return nil
	}
	a.sink(bridge.Event{Kind: bridge.EventTool, TurnID: t.id, Text: "delete_file " + name})
	a.outcome(t, r, "deleted "+name)
	return nil
}

// deletionDiff shows the removal of content as a unified diff.
func deletionDiff(name, content string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- a/%s\n+++ /dev/null\n", name)
	n := strings.Count(content, "\n")
	fmt.Fprintf(&b, "@@ -1,%d +0,0 @@\n", n)
	for line := range strings.Lines(content) {
		b.WriteString("-" + line)
	}
	return b.String()
}

func (a *Agent) progress(t *turn, line string) {
	a.sink(bridge.Event{Kind: bridge.EventProgress, TurnID: t.id, Text: line})
}

// outcome reports the result of a tool call in a message and in the reply.
func (a *Agent) outcome(t *turn, r *reply, line string) {
	a.sink(bridge.Event{Kind: bridge.EventMessage, TurnID: t.id, Text: line})
	r.lines = append(r.lines, line)
}

// String is the turn's final message.
func (r *reply) String() string {
	var b strings.Builder
	b.WriteString(intro + "\n")
	if r.asked != "" {
		fmt.Fprintf(&b, "You asked: %q\n", r.asked)
	}
	if len(r.read) > 0 {
		fmt.Fprintf(&b, "I looked at %s.\n", strings.Join(r.read, ", "))
	}
	for _, l := range r.lines {
		b.WriteString(l + "\n")
	}
	b.WriteString("Nothing real was changed: my files live in memory.")
	return b.String()
}
