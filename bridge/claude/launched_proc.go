package claude

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/procgroup"
)

// lproc is one claude process.
type lproc struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	wmu      sync.Mutex
	stderr   *tailBuffer
	started  time.Time
	ready    bool // initialize answered (under Launched.mu)
	killed   bool // we killed it on purpose (under Launched.mu)
	readDone chan struct{}
	done     chan struct{} // process reaped and stdout drained
	waitErr  error
}

func (p *lproc) write(line []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, err := p.stdin.Write(append(line, '\n'))
	return err
}

// kill ends the process group: claude and the tools it runs.
func (p *lproc) kill() {
	procgroup.Kill(p.cmd)
}

// stop closes stdin (claude exits at end of input) and kills after grace.
func (p *lproc) stop(grace time.Duration) {
	_ = p.stdin.Close()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return
	case <-t.C:
	}
	p.kill()
	<-p.done
}

// launch starts a process and waits until it answers initialize. With
// resume it continues the agent's session.
func (l *Launched) launch(ctx context.Context, resume bool) error {
	l.mu.Lock()
	args := append([]string(nil), l.args...)
	if resume {
		args = append(args, "--resume", l.sessionID)
	} else {
		args = append(args, "--session-id", l.sessionID)
	}
	l.mu.Unlock()
	cmd := exec.Command(l.bin, args...)
	cmd.Dir = l.d.Agent.Dir
	cmd.Env = l.env
	procgroup.Own(cmd)
	cmd.WaitDelay = 2 * time.Second
	stderr := &tailBuffer{max: 4096}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return err
	}
	w.Close()
	p := &lproc{cmd: cmd, stdin: stdin, stderr: stderr, started: time.Now(),
		readDone: make(chan struct{}), done: make(chan struct{})}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		p.kill()
		_ = cmd.Wait()
		r.Close()
		return bridge.ErrNotRunning
	}
	l.proc, l.unreplayed = p, nil
	l.mu.Unlock()
	go func() {
		l.read(p, r)
		close(p.readDone)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		t := time.NewTimer(2 * time.Second)
		select {
		case <-p.readDone:
		case <-t.C: // a tool's child still holds stdout
			r.Close()
			<-p.readDone
		}
		t.Stop()
		r.Close()
		close(p.done)
		l.exited(p)
	}()

	cctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if _, err := l.control(cctx, p, "initialize", initializeHooks()); err != nil {
		p.kill()
		<-p.done
		return err
	}
	l.mu.Lock()
	p.ready = true
	l.mu.Unlock()
	l.log.Info("claude ready", "pid", cmd.Process.Pid, "session", l.sessionID, "resumed", resume)
	return nil
}

func (l *Launched) read(p *lproc, r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			l.handle(p, line)
		}
		if err != nil {
			return
		}
	}
}

// handle acts on one stdout line of process p.
func (l *Launched) handle(p *lproc, line []byte) {
	m, err := parseOutLine(line)
	if err != nil {
		l.log.Debug("claude wrote a non-JSON line", "line", clip(string(line), 200))
		return
	}
	switch m.Type {
	case "control_response":
		if m.Response == nil {
			return
		}
		l.mu.Lock()
		ch := l.ctlWait[m.Response.RequestID]
		delete(l.ctlWait, m.Response.RequestID)
		l.mu.Unlock()
		if ch != nil {
			ch <- *m.Response
		}
	case "control_request":
		var req canUseTool
		_ = json.Unmarshal(m.Request, &req)
		switch req.Subtype {
		case "can_use_tool":
			go l.permission(p, m.RequestID, req)
		case "hook_callback":
			_ = p.write(l.hookCallback(m.RequestID, m.Request))
		default:
			_ = p.write(errorResponseLine(m.RequestID, "not supported by the wheelhouse bridge: "+req.Subtype))
		}
	case "control_cancel_request":
		l.mu.Lock()
		if cancel := l.asks[m.RequestID]; cancel != nil {
			cancel()
		}
		l.mu.Unlock()
	case "system":
		if m.Subtype == "init" && m.SessionID != "" {
			l.mu.Lock()
			if l.proc == p {
				l.sessionID = m.SessionID
			}
			l.mu.Unlock()
		}
	case "assistant":
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.proc != p || l.turn == "" {
			return
		}
		sub := m.ParentToolUseID != nil && *m.ParentToolUseID != ""
		for _, b := range m.Message.blocks() {
			switch {
			case b.Type == "text" && strings.TrimSpace(b.Text) != "" && !sub:
				l.events.push(bridge.Event{Kind: bridge.EventMessage, TurnID: l.turn, Text: b.Text})
			case b.Type == "text" && strings.TrimSpace(b.Text) != "":
				l.events.push(bridge.Event{Kind: bridge.EventProgress, TurnID: l.turn, Text: clip(b.Text, 500)})
			case b.Type == "tool_use":
				l.events.push(bridge.Event{Kind: bridge.EventTool, TurnID: l.turn,
					Text: summarizeCall(bridge.ToolCall{Tool: b.Name, Args: b.Input})})
			}
		}
	case "user":
		if !m.IsReplay {
			return
		}
		var parts []string
		for _, b := range m.Message.blocks() {
			if b.Type == "text" {
				parts = append(parts, b.Text)
			}
		}
		l.mu.Lock()
		if l.proc == p {
			l.unreplayed = takeUp(l.unreplayed, strings.Join(parts, "\n"))
		}
		l.mu.Unlock()
	case "result":
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.proc != p || l.turn == "" {
			return
		}
		if len(l.unreplayed) > 0 && !l.interrupt {
			// A steer came too late for this round; the CLI runs it next,
			// still in this turn.
			return
		}
		status, text := "completed", m.Result
		switch {
		case l.interrupt:
			status = "interrupted"
		case m.IsError:
			status = "failed"
			if text == "" {
				text = strings.Join(m.Errors, "; ")
			}
		}
		l.endTurnLocked(bridge.EventTurnEnded, status, text)
	}
}

// takeUp removes from pending the messages a replay shows the CLI took up.
// Claude Code joins messages that queued up together with newlines into one
// replay.
func takeUp(pending []string, replay string) []string {
	if len(pending) == 0 {
		return pending
	}
	n := 0
	for n < len(pending) {
		p := pending[n]
		if replay == p {
			n++
			break
		}
		if !strings.HasPrefix(replay, p+"\n") {
			break
		}
		replay = replay[len(p)+1:]
		n++
	}
	if n == 0 {
		n = 1 // an echo we cannot match still stands for one message
	}
	return pending[n:]
}

// control sends one of our control requests and waits for its answer.
func (l *Launched) control(ctx context.Context, p *lproc, subtype string, extra map[string]any) (json.RawMessage, error) {
	l.mu.Lock()
	l.ctlSeq++
	id := fmt.Sprintf("wh-%d", l.ctlSeq)
	ch := make(chan ctlResponse, 1)
	l.ctlWait[id] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.ctlWait, id)
		l.mu.Unlock()
	}()
	if err := p.write(controlRequestLine(id, subtype, extra)); err != nil {
		return nil, fmt.Errorf("%s: cannot write to claude: %w", subtype, err)
	}
	select {
	case r := <-ch:
		if r.Subtype == "error" {
			return nil, fmt.Errorf("%s: claude answered: %s", subtype, r.Error)
		}
		return r.Response, nil
	case <-p.done:
		return nil, fmt.Errorf("%s: claude exited (%v): %s", subtype, p.waitErr, p.stderr.String())
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no answer from claude: %w", subtype, ctx.Err())
	}
}

// permission routes a can_use_tool request through the gate and answers it.
func (l *Launched) permission(p *lproc, id string, req canUseTool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l.mu.Lock()
	if l.proc != p || l.closed {
		l.mu.Unlock()
		return
	}
	l.asks[id] = cancel
	turn, tainted := l.turn, l.tainted
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.asks, id)
		l.mu.Unlock()
	}()
	if req.Input == nil {
		req.Input = map[string]any{}
	}
	call := bridge.ToolCall{Tool: req.ToolName, Args: req.Input}
	err := askAndRedeem(ctx, l.d.Gate, bridge.ApprovalAsk{TurnID: turn, Call: call, Summary: summarizeCall(call), Diff: diffOf(call), Tainted: tainted})
	if err != nil && ctx.Err() != nil {
		return // claude withdrew the question (interrupt) or we are closing
	}
	msg := ""
	if err != nil {
		msg = "Denied through Wheelhouse: " + err.Error()
		l.log.Info("permission denied", "tool", req.ToolName, "reason", err)
	}
	_ = p.write(permissionResponseLine(id, err == nil, req.Input, msg))
}

// exited handles the end of process p: a crash ends the turn as failed and
// the process is restarted on the same session.
func (l *Launched) exited(p *lproc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.proc != p {
		return
	}
	l.proc = nil
	for _, cancel := range l.asks {
		cancel()
	}
	if l.closed || !p.ready {
		return
	}
	why := fmt.Sprintf("claude exited (%v)", p.waitErr)
	if tail := strings.TrimSpace(p.stderr.String()); tail != "" {
		why += ": " + clip(tail, 500)
	}
	if l.turn != "" {
		status := "failed"
		if l.interrupt {
			status = "interrupted"
		}
		l.endTurnLocked(bridge.EventTurnEnded, status, why)
	}
	if time.Since(p.started) > maxRestartDelay {
		l.restarts = 0
	}
	if !p.killed {
		l.events.push(bridge.Event{Kind: bridge.EventFailed, Text: why})
	}
	l.log.Warn("claude exited; restarting", "why", why)
	l.restartWG.Add(1)
	go func() {
		defer l.restartWG.Done()
		l.restart()
	}()
}

// restart relaunches until it works or the harness closes: at once, then
// with doubling delays. After three failed resumes it starts a new session.
func (l *Launched) restart() {
	for {
		l.mu.Lock()
		n := l.restarts
		l.restarts++
		resume := l.hadTurn
		if n >= 3 && resume {
			l.hadTurn, resume = false, false
			l.sessionID = newUUID()
			l.log.Warn("cannot resume the claude session; starting a new one")
		} else if !resume {
			l.sessionID = newUUID()
		}
		if !resume {
			l.tainted = false // a new conversation: nothing anyone said is in it
		}
		l.mu.Unlock()
		if n > 0 {
			d := min(time.Duration(1<<min(n-1, 5))*time.Second, maxRestartDelay)
			t := time.NewTimer(d)
			select {
			case <-l.stopCh:
				t.Stop()
				return
			case <-t.C:
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-l.stopCh:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := l.launch(ctx, resume)
		cancel()
		if err == nil {
			l.events.push(bridge.Event{Kind: bridge.EventRecovered, Text: "claude restarted"})
			return
		}
		if errors.Is(err, bridge.ErrNotRunning) {
			return
		}
		l.log.Warn("claude restart failed", "err", err)
		select {
		case <-l.stopCh:
			return
		default:
		}
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
