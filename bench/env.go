package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/hub"
)

// env is a hub started for measuring, with an admin and a room.
type env struct {
	h     *hub.Hub
	dir   string
	admin *chat.User
	token string
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newEnv(ctx context.Context) (*env, error) {
	dir, err := os.MkdirTemp("", "wheelhouse-bench-")
	if err != nil {
		return nil, err
	}
	h, err := hub.New(hub.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", NATSAddr: "127.0.0.1:0", Logger: quietLogger(), WSQueue: 4096, SteerBurst: 1 << 30, SteerRefill: time.Nanosecond})
	if err != nil {
		return nil, err
	}
	if err := h.Open(ctx); err != nil {
		return nil, err
	}
	rs := h.Rooms()
	if _, err := rs.Setup(ctx, "bench", "bench-password"); err != nil {
		return nil, err
	}
	h.SetupDone()
	admin, err := rs.UserByName(ctx, "bench")
	if err != nil {
		return nil, err
	}
	tok, err := rs.CreateToken(ctx, admin, "bench")
	if err != nil {
		return nil, err
	}
	if _, err := rs.CreateRoom(ctx, admin, "bench", false, ""); err != nil {
		return nil, err
	}
	return &env{h: h, dir: dir, admin: admin, token: tok}, nil
}

func (e *env) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	e.h.Close(ctx)
	os.RemoveAll(e.dir)
}

func (e *env) url(path string) string { return e.h.URL() + path }

// post posts text to the bench room and fails unless it was acknowledged.
func (e *env) post(ctx context.Context, client *http.Client, text string) error {
	body, _ := json.Marshal(map[string]string{"text": text})
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url("/api/v1/rooms/bench/messages"), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	drain(resp)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("post: %s", resp.Status)
	}
	return nil
}

func check(err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
