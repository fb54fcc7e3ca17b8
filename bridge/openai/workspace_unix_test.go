//go:build unix

package openai

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWorkspaceFIFORefusedWithoutHanging(t *testing.T) {
	ws, dir, _ := newWorkspace(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.readFile("pipe"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("err = %v", err)
	}
}
