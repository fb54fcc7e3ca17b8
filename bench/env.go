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
	"strings"
	"sync"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/authz"
	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/hub"
)

// env is a hub started for measuring, with an admin and a room "bench".
type env struct {
	h     *hub.Hub
	dir   string
	keep  bool // dir belongs to the caller
	admin *chat.User
	token string
	// sockets the bench opened: closed before the hub, so it does not
	// wait on their close handshakes
	sockets []*socketPoster
}

type envOptions struct {
	Sync string // hub.SyncInterval (default) or hub.SyncAlways
	// Limiter keeps the hub's default mention rate limit; without it the
	// limit is lifted so a run measures delivery, not the limiter.
	Limiter bool
	Dir     string // data directory to use and keep ("": a temporary one)
}

// noBudgets turns the per-person limits off: the bench measures the hub,
// not its limits (its few people post, open sockets and create rooms far
// beyond what one person may).
var noBudgets = authz.Budgets{}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newEnv(ctx context.Context, o envOptions) (*env, error) {
	dir, keep := o.Dir, o.Dir != ""
	if !keep {
		var err error
		if dir, err = os.MkdirTemp("", "wheelhouse-bench-"); err != nil {
			return nil, err
		}
	}
	cfg := hub.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", NATSAddr: "127.0.0.1:0", Logger: quietLogger(), Sync: o.Sync, Budgets: &noBudgets}
	if !o.Limiter {
		cfg.SteerBurst, cfg.SteerRefill = 1<<30, time.Nanosecond
	}
	h, err := hub.New(cfg)
	if err != nil {
		return nil, err
	}
	e := &env{h: h, dir: dir, keep: keep}
	if err := h.Open(ctx); err != nil {
		e.close()
		return nil, err
	}
	rs := h.Rooms()
	if _, err := rs.Setup(ctx, "bench", "bench-password"); err != nil {
		e.close()
		return nil, err
	}
	h.SetupDone()
	if e.admin, err = rs.UserByName(ctx, "bench"); err == nil {
		e.token, err = rs.CreateToken(ctx, e.admin, "bench")
	}
	if err == nil {
		_, err = rs.CreateRoom(ctx, e.admin, "bench", false, "")
	}
	if err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	parallel(len(e.sockets), 16, func(i int) error { e.sockets[i].close(); return nil })
	e.h.Close(ctx)
	if !e.keep {
		os.RemoveAll(e.dir)
	}
}

func (e *env) url(path string) string { return e.h.URL() + path }

func (e *env) wsURL(path string) string { return strings.Replace(e.url(path), "http", "ws", 1) }

// person is a user the bench made, with an API token.
type person struct {
	name, token string
	user        *chat.User
}

// addPeople makes n users named prefix0…: their accounts are appended to
// the log directly (a password hash per user would take minutes), their
// tokens through the service.
func (e *env) addPeople(ctx context.Context, prefix string, n int) ([]person, error) {
	rs := e.h.Rooms()
	out := make([]person, n)
	err := parallel(n, 16, func(i int) error {
		name := fmt.Sprintf("%s%d", prefix, i)
		ev, err := chat.NewEvent(chat.EvUserCreated, time.Now(), chat.UserCreated{Name: name, PasswordHash: "none"})
		if err != nil {
			return err
		}
		if _, err := rs.Log.Append(ctx, ev); err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
		u, err := rs.UserByName(ctx, name)
		if err != nil {
			return err
		}
		tok, err := rs.CreateToken(ctx, u, "bench")
		out[i] = person{name: name, token: tok, user: u}
		return err
	})
	return out, err
}

// addMembers adds people to a room the admin created.
func (e *env) addMembers(ctx context.Context, roomName string, ps []person) error {
	return parallel(len(ps), 16, func(i int) error {
		return e.h.Rooms().AddMember(ctx, e.admin, roomName, ps[i].name)
	})
}

// parallel runs f(0…n-1) on w workers and returns the first error.
func parallel(n, w int, f func(i int) error) error {
	var mu sync.Mutex
	var first error
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(w, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// post posts text to a room as the token's user and returns the message
// id; it fails unless the post was acknowledged, or when a mention in it
// was rejected.
func (e *env) post(ctx context.Context, client *http.Client, token, roomName, text string) (uint64, error) {
	body, _ := json.Marshal(map[string]string{"text": text})
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url("/api/v1/rooms/"+roomName+"/messages"), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusCreated {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("post: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("post: %w", err)
	}
	return postAnswer(b)
}

// postAnswer reads a post's answer: the message id, or an error when a
// mention in it was rejected.
func postAnswer(b []byte) (uint64, error) {
	var out struct {
		Message struct {
			ID uint64 `json:"id"`
		} `json:"message"`
		Receipts []struct {
			Status, Reason, Detail string
		} `json:"receipts"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return 0, fmt.Errorf("post: %w", err)
	}
	for _, r := range out.Receipts {
		if r.Status == "rejected" || r.Status == "failed" || r.Status == "expired" {
			return 0, fmt.Errorf("post: the mention was %s (%s): %s", r.Status, r.Reason, r.Detail)
		}
	}
	return out.Message.ID, nil
}

func check(err error, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
