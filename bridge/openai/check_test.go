package openai

import (
	"context"
	"strings"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/bridge"
	"github.com/wheelhouse-dev/wheelhouse/internal/stubmodel"
)

func TestCheck(t *testing.T) {
	stub := stubmodel.NewChat(t)
	agent := func(model string) bridge.AgentConfig {
		return bridge.AgentConfig{Name: "local", Harness: Kind, Dir: t.TempDir(),
			Options: map[string]string{"base_url": stub.URL(), "model": model, "state_dir": t.TempDir()}}
	}
	if got, err := Check(context.Background(), agent("stub-model")); err != nil || got != stub.URL()+" serves stub-model" {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := Check(context.Background(), agent("qwen3:8b")); err == nil || !strings.Contains(err.Error(), `does not serve model "qwen3:8b" (it serves: stub-model)`) {
		t.Fatalf("err = %v", err)
	}
	stub.Close()
	if _, err := Check(context.Background(), agent("stub-model")); err == nil || !strings.Contains(err.Error(), "is unreachable") {
		t.Fatalf("err = %v", err)
	}
}
