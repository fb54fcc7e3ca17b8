package claude

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude/claudehook"
)

const testSession = "0ca4b6f0-0000-4000-8000-000000000001"

var preToolUse = `{"session_id":"` + testSession + `","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/p/x"},"tool_use_id":"toolu_1"}`

// newProject is a machine whose project has the state a bridge would
// create, and the note key.
func newProject(t testing.TB) (machine, claudehook.Project, []byte) {
	t.Helper()
	m := newMachine(t)
	p := claudehook.ForProject(m.state, m.dir)
	if err := p.Create(); err != nil {
		t.Fatal(err)
	}
	key, err := p.LoadOrCreateKey()
	if err != nil {
		t.Fatal(err)
	}
	return m, p, key
}

var noteSeq atomic.Uint64

func queueNote(t testing.TB, p claudehook.Project, key []byte, n claudehook.Note) string {
	t.Helper()
	if n.QueuedAt.IsZero() {
		n.QueuedAt = time.Now()
	}
	if n.Expires.IsZero() {
		n.Expires = time.Now().Add(time.Hour)
	}
	name := claudehook.NoteName(time.Now(), noteSeq.Add(1), n.SteerID)
	if err := p.WriteNote(key, name, n); err != nil {
		t.Fatal(err)
	}
	return name
}

// runHook runs the hook in-process as Claude Code would in m's project.
func runHook(t testing.TB, m machine, stdin string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := RunHook(context.Background(), strings.NewReader(stdin), &out, m.hookEnv(), "")
	return out.String(), code
}

// Hook processes racing over one inbox deliver every note exactly once.
func TestRunHookConcurrentClaimersDeliverOnce(t *testing.T) {
	m, p, key := newProject(t)
	const notes, workers = 40, 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	var outputs []string
	stop := make(chan struct{})
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				cmd := exec.Command(hookBin)
				cmd.Env = m.hookEnv()
				cmd.Stdin = strings.NewReader(preToolUse)
				out, err := cmd.Output()
				if err != nil {
					t.Error(err)
					return
				}
				if len(out) > 0 {
					mu.Lock()
					outputs = append(outputs, string(out))
					mu.Unlock()
				}
			}
		}()
	}
	for i := range notes {
		queueNote(t, p, key, claudehook.Note{Session: testSession, SteerID: fmt.Sprint(i), SenderIsOwner: true, Text: fmt.Sprintf("<N%03d>", i)})
	}
	waitFor(t, 20*time.Second, "inbox drained", func() bool {
		entries, _ := os.ReadDir(p.Inbox())
		return len(entries) == 0
	})
	close(stop)
	wg.Wait()
	all := strings.Join(outputs, "\n")
	for i := range notes {
		if c := strings.Count(all, fmt.Sprintf("<N%03d>", i)); c != 1 {
			t.Errorf("note %d delivered %d times", i, c)
		}
	}
	for _, o := range outputs { // each hook's share is in arrival order
		last := -1
		for i := range notes {
			if j := strings.Index(o, fmt.Sprintf("<N%03d>", i)); j >= 0 {
				if j < last {
					t.Errorf("out of order within one delivery: %q", o)
				}
				last = j
			}
		}
	}
}

func TestShellWords(t *testing.T) {
	for in, want := range map[string]string{
		`/usr/bin/wheelhouse hook claude`:   "/usr/bin/wheelhouse|hook|claude",
		`"/path with space/wh" hook claude`: "/path with space/wh|hook|claude",
		`FOO=1 'a b'  c`:                    "FOO=1|a b|c",
		``:                                  "",
	} {
		if got := strings.Join(shellWords(in), "|"); got != want {
			t.Errorf("shellWords(%q) = %q, want %q", in, got, want)
		}
	}
}
