package room

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync/atomic"

	wh "github.com/wheelhouse-dev/wheelhouse"
	"github.com/wheelhouse-dev/wheelhouse/chat"
)

// An idempotency key (the API's Idempotency-Key header) makes the events a
// request appends carry ids derived from it, so JetStream stores a retry's
// events once (within eventlog.DedupWindow) and the retry gets the first
// answer.
type idemKey struct {
	base string
	n    atomic.Int32
}

type idemCtxKey struct{}

// MaxIdempotencyKey bounds the header's length.
const MaxIdempotencyKey = 200

// WithIdempotencyKey returns ctx carrying key, scoped to the user and the
// operation (a retry must come from the same user for the same thing).
func WithIdempotencyKey(ctx context.Context, user, op, key string) (context.Context, error) {
	if len(key) == 0 || len(key) > MaxIdempotencyKey {
		return ctx, wh.Errorf(wh.EInvalid, "Idempotency-Key must be 1 to %d characters", MaxIdempotencyKey)
	}
	for _, c := range key {
		if c < 0x21 || c > 0x7e {
			return ctx, wh.Errorf(wh.EInvalid, "Idempotency-Key must be printable ASCII without spaces")
		}
	}
	sum := sha256.Sum256([]byte(user + "\x00" + op + "\x00" + key))
	return context.WithValue(ctx, idemCtxKey{}, &idemKey{base: "k" + hex.EncodeToString(sum[:16])}), nil
}

// Retried reports whether ctx carries an idempotency key (the caller may be
// a retry, so answers are read back rather than assumed).
func Retried(ctx context.Context) bool { return ctx.Value(idemCtxKey{}) != nil }

func retried(ctx context.Context) bool { return Retried(ctx) }

// newEvent builds an event: with an idempotency key in ctx its id derives
// from the key and the event's place in the request.
func (s *Service) newEvent(ctx context.Context, typ string, data any) (chat.Event, error) {
	ev, err := chat.NewEvent(typ, s.now(), data)
	if err != nil {
		return ev, wh.Wrap(err, "encode %s", typ)
	}
	if k, ok := ctx.Value(idemCtxKey{}).(*idemKey); ok {
		ev.ID = fmt.Sprintf("%s.%d", k.base, k.n.Add(1))
	}
	return ev, nil
}

// claimKey binds ctx's idempotency key to what the request asks for (a
// digest of its parts): a retry asking the same gets on, one asking
// something else is refused (422) instead of silently answered with the
// first request's result. The binding lives in the limits bucket (a day,
// longer than the log's deduplication window).
func (s *Service) claimKey(ctx context.Context, parts ...any) error {
	k, ok := ctx.Value(idemCtxKey{}).(*idemKey)
	if !ok || s.budgets.kv == nil {
		return nil
	}
	b, _ := json.Marshal(parts)
	sum := sha256.Sum256(b)
	fp := hex.EncodeToString(sum[:16])
	same := true
	err := s.budgets.kv.cas(ctx, "i."+k.base, func(old []byte) []byte {
		if old != nil {
			same = string(old) == fp
			return nil
		}
		return []byte(fp)
	})
	if err != nil {
		// Unchecked, not refused: the key still dedupes in the log's window.
		s.limitsUnchecked("idempotency", err)
		return nil
	}
	if !same {
		return &wh.Error{Code: wh.EUnprocessable, Reason: "idempotency-key-reused",
			Message: "this Idempotency-Key was used for a different request: a retry must send the same body; use a new key for a new request"}
	}
	return nil
}
