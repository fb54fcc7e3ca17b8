package claude

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

// Stats summarises the wall time of N runs.
type Stats struct {
	N                     int
	Median, P99, Min, Max time.Duration
}

func statsOf(d []time.Duration) Stats {
	if len(d) == 0 {
		return Stats{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	p99 := (len(s)*99 + 99) / 100 // nearest rank
	return Stats{N: len(s), Median: s[len(s)/2], P99: s[min(p99, len(s))-1], Min: s[0], Max: s[len(s)-1]}
}

func (s Stats) String() string {
	return fmt.Sprintf("median %v, p99 %v (n=%d, min %v, max %v)", s.Median.Round(10*time.Microsecond),
		s.P99.Round(10*time.Microsecond), s.N, s.Min.Round(10*time.Microsecond), s.Max.Round(10*time.Microsecond))
}

// HookBench is the cost of one hook process per Claude Code tool call.
type HookBench struct {
	NoNote  Stats // PreToolUse with an empty inbox: what every tool call pays
	OneNote Stats // PreToolUse that claims and prints one note
	Shell   Stats // `sh -c :` in the same run: the floor of starting any process
}

func (b HookBench) String() string {
	ratio := func(s Stats) string {
		if b.Shell.Median == 0 {
			return ""
		}
		return fmt.Sprintf(" = %.2f× sh", float64(s.Median)/float64(b.Shell.Median))
	}
	return fmt.Sprintf("hook, no note:  %v%s\nhook, one note: %v%s\nsh -c :        %v\n",
		b.NoNote, ratio(b.NoNote), b.OneNote, ratio(b.OneNote), b.Shell)
}

// BenchHook runs hookCmd (for example {"/usr/local/bin/wheelhouse", "hook",
// "claude"}) n times as a PreToolUse hook in a scratch project with no note
// pending, n times with one note pending, and `sh -c :` n times, interleaved
// so drift hits all three alike. It times whole processes, as Claude Code
// pays them, and checks each answer.
func BenchHook(ctx context.Context, hookCmd []string, n int) (HookBench, error) {
	var res HookBench
	if len(hookCmd) == 0 || n <= 0 {
		return res, fmt.Errorf("bench: need a hook command and n > 0")
	}
	if strings.ContainsRune(hookCmd[0], filepath.Separator) {
		// The hook runs in a project folder of its own: a relative path
		// means the caller's folder.
		abs, err := filepath.Abs(hookCmd[0])
		if err != nil {
			return res, err
		}
		hookCmd = append([]string{abs}, hookCmd[1:]...)
	}
	tmp, err := os.MkdirTemp("", "wheelhouse-hookbench-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	proj, state := filepath.Join(tmp, "project"), filepath.Join(tmp, "state")
	if err := os.Mkdir(proj, 0o700); err != nil {
		return res, err
	}
	sc := claudehook.ForProject(state, proj)
	if err := sc.Create(); err != nil {
		return res, err
	}
	key, err := sc.LoadOrCreateKey()
	if err != nil {
		return res, err
	}
	env := append(os.Environ(), claudehook.EnvProjectDir+"="+proj, claudehook.EnvStateDir+"="+state)
	input := []byte(`{"session_id":"bench","transcript_path":"/dev/null","cwd":"` + proj +
		`","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash",` +
		`"tool_input":{"command":"echo hi","description":"Say hi"},"tool_use_id":"toolu_bench"}`)
	runWith := func(argv []string, input []byte) (time.Duration, []byte, error) {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env = env
		cmd.Dir = proj
		cmd.Stdin = bytes.NewReader(input)
		var out bytes.Buffer
		cmd.Stdout = &out
		start := time.Now()
		err := cmd.Run()
		return time.Since(start), out.Bytes(), err
	}
	run := func(argv []string) (time.Duration, []byte, error) { return runWith(argv, input) }
	// The session starts clean, as Claude Code starts it: one the hook
	// never saw start counts as tainted.
	if _, _, err := runWith(hookCmd, []byte(`{"session_id":"bench","cwd":"`+proj+`","hook_event_name":"SessionStart","source":"startup"}`)); err != nil {
		return res, fmt.Errorf("bench: hook: %w", err)
	}
	var none, one, shell []time.Duration
	sh := []string{"sh", "-c", ":"}
	for i := range n {
		d, _, err := run(sh)
		if err != nil {
			return res, fmt.Errorf("bench: sh: %w", err)
		}
		shell = append(shell, d)

		d, out, err := run(hookCmd)
		if err != nil {
			return res, fmt.Errorf("bench: hook: %w", err)
		}
		if len(bytes.TrimSpace(out)) != 0 {
			return res, fmt.Errorf("bench: hook printed %q with no note pending", out)
		}
		none = append(none, d)

		marker := fmt.Sprintf("bench-note-%d", i)
		now := time.Now()
		if err := sc.WriteNote(key, claudehook.NoteName(now, uint64(i), marker), claudehook.Note{Session: "bench", SteerID: marker,
			Sender: "bench", SenderIsOwner: true, Text: marker, QueuedAt: now, Expires: now.Add(time.Hour)}); err != nil {
			return res, err
		}
		d, out, err = run(hookCmd)
		if err != nil {
			return res, fmt.Errorf("bench: hook: %w", err)
		}
		if !strings.Contains(string(out), marker) {
			return res, fmt.Errorf("bench: hook did not deliver the note, printed %q", out)
		}
		one = append(one, d)
		if err := os.RemoveAll(sc.Claimed()); err != nil {
			return res, err
		}
		if err := os.Mkdir(sc.Claimed(), 0o700); err != nil {
			return res, err
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
	}
	return HookBench{NoNote: statsOf(none), OneNote: statsOf(one), Shell: statsOf(shell)}, nil
}
