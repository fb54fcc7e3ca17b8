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

const preToolUse = `{"session_id":"s","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_1"}`

// newProject is a project with the side channel a bridge would create.
func newProject(t testing.TB) (string, claudehook.Dir) {
	t.Helper()
	dir := t.TempDir()
	sc := claudehook.ForProject(dir)
	if err := sc.Create(); err != nil {
		t.Fatal(err)
	}
	return dir, sc
}

var noteSeq atomic.Uint64

func queueNote(t testing.TB, sc claudehook.Dir, n claudehook.Note) string {
	t.Helper()
	if n.QueuedAt.IsZero() {
		n.QueuedAt = time.Now()
	}
	name := claudehook.NoteName(time.Now(), noteSeq.Add(1), n.SteerID)
	if err := sc.WriteNote(name, n); err != nil {
		t.Fatal(err)
	}
	return name
}

func runHook(t testing.TB, proj, stdin string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	env := []string{"PATH=/usr/bin"}
	if proj != "" {
		env = append(env, claudehook.EnvProjectDir+"="+proj)
	}
	code := RunHook(context.Background(), strings.NewReader(stdin), &out, env, "")
	return out.String(), code
}

// Hook processes racing over one inbox deliver every note exactly once.
func TestRunHookConcurrentClaimersDeliverOnce(t *testing.T) {
	dir, sc := newProject(t)
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
				cmd.Env = []string{claudehook.EnvProjectDir + "=" + dir}
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
		queueNote(t, sc, claudehook.Note{SteerID: fmt.Sprint(i), Text: fmt.Sprintf("<N%03d>", i)})
	}
	waitFor(t, 20*time.Second, "inbox drained", func() bool {
		entries, _ := os.ReadDir(sc.Inbox())
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
