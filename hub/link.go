package hub

import (
	"context"
	"log/slog"

	"github.com/wheelhouse-dev/wheelhouse/web"
)

// Link connects the hub to bridges over NATS: routing steers, receiving
// announcements, heartbeats, receipts, turn output and approval requests.
type Link struct {
	log *slog.Logger
}

func newLink(log *slog.Logger) *Link { return &Link{log: log} }

func (l *Link) lookupBridge(publicKey string) (string, bool) { return "", false }

func (l *Link) start(ctx context.Context, h *Hub) error { return nil }

func (l *Link) stop() {}

func (l *Link) api() web.AgentAPI { return nil }
