package authz

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Rate is a per-person budget: N actions at once, refilled evenly over Per
// (a token bucket holding N tokens that refills N tokens every Per). The
// zero Rate is no limit. It is written "N/Per", e.g. "300/5m", or "off".
type Rate struct {
	N   int
	Per time.Duration
}

// MaxRateN bounds N (a bucket's state stays small).
const MaxRateN = 1_000_000

// Off reports whether r limits nothing.
func (r Rate) Off() bool { return r.N <= 0 || r.Per <= 0 }

func (r Rate) String() string {
	if r.Off() {
		return "off"
	}
	return strconv.Itoa(r.N) + "/" + shortDuration(r.Per)
}

func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseRate reads "N/duration" ("300/5m", "50/1h") or "off" (also "0").
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	if s == "off" || s == "0" {
		return Rate{}, nil
	}
	n, per, ok := strings.Cut(s, "/")
	if !ok {
		return Rate{}, fmt.Errorf("a rate is N/duration, such as 300/5m, or off; not %q", s)
	}
	c, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || c < 1 || c > MaxRateN {
		return Rate{}, fmt.Errorf("a rate's count is a whole number from 1 to %d; not %q", MaxRateN, n)
	}
	d, err := time.ParseDuration(strings.TrimSpace(per))
	if err != nil || d < time.Second || d > 7*24*time.Hour {
		return Rate{}, fmt.Errorf("a rate's period is a duration from 1s to 168h, such as 5m; not %q", per)
	}
	return Rate{N: c, Per: d}, nil
}

func (r Rate) MarshalJSON() ([]byte, error) { return json.Marshal(r.String()) }

func (r *Rate) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a rate is a string such as \"300/5m\" or \"off\"")
	}
	v, err := ParseRate(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// Bucket is one person's token bucket for one kind of action: Tokens left
// at At, of a bucket of N. The zero Bucket is a full one.
type Bucket struct {
	Tokens float64   `json:"t"`
	At     time.Time `json:"at"`
	N      int       `json:"n,omitempty"`
	Used   bool      `json:"u,omitempty"` // false: never taken from (full)
}

// Take decides one action against bucket b under rate r at now: it returns
// the bucket after the action and, when the action must wait, how long
// (then the bucket is unchanged unless reserve). With reserve the action
// is taken anyway and the wait is how long the caller must pause first (a
// bridge's output is paced, never dropped). An off rate always allows.
func Take(b Bucket, r Rate, now time.Time, reserve bool) (Bucket, time.Duration) {
	if r.Off() {
		return b, 0
	}
	burst := float64(r.N)
	perToken := float64(r.Per) / burst // nanoseconds per token
	tokens := burst
	if b.Used {
		// What was spent stays spent when an admin changes the rate: a
		// bigger bucket holds the difference more, a smaller one less.
		tokens = b.Tokens + float64(r.N-b.N)
		if el := now.Sub(b.At); el > 0 {
			tokens = math.Min(burst, tokens+float64(el)/perToken)
		}
	}
	if tokens >= 1 {
		return Bucket{Tokens: tokens - 1, At: now, N: r.N, Used: true}, 0
	}
	wait := time.Duration(math.Ceil((1 - tokens) * perToken))
	if !reserve {
		return b, wait
	}
	// A reservation may run a bucket into debt of at most one burst.
	if tokens-1 < -burst {
		return b, wait
	}
	return Bucket{Tokens: tokens - 1, At: now, N: r.N, Used: true}, wait
}

// RetryAfterSeconds is the Retry-After value for a wait: whole seconds,
// rounded up, at least 1.
func RetryAfterSeconds(wait time.Duration) int {
	return max(1, int((wait+time.Second-1)/time.Second))
}

// Budgets are the per-person limits a hub enforces (docs/operations.md,
// "Per-person limits"). A zero field limits nothing.
type Budgets struct {
	// Posts is a person's appends to rooms: messages, edits, deletions
	// and reactions.
	Posts Rate `json:"posts"`
	// Rooms is rooms created.
	Rooms Rate `json:"rooms"`
	// Uploads is files uploaded.
	Uploads Rate `json:"uploads"`
	// Bridge is an agent's output, per bridge: paced, never refused.
	Bridge Rate `json:"bridge"`
	// Sockets bounds a person's open event sockets.
	Sockets int `json:"sockets"`
}

// MaxSockets bounds the Sockets limit.
const MaxSockets = 1000

// BudgetOverrides are an admin's changes to the hub's limits (PUT
// /settings): a field left out keeps the hub's flag.
type BudgetOverrides struct {
	Posts   *Rate `json:"posts,omitempty"`
	Rooms   *Rate `json:"rooms,omitempty"`
	Uploads *Rate `json:"uploads,omitempty"`
	Bridge  *Rate `json:"bridge,omitempty"`
	Sockets *int  `json:"sockets,omitempty"`
}

// Over is base with o's fields in place of its own.
func (o *BudgetOverrides) Over(base Budgets) Budgets {
	if o == nil {
		return base
	}
	for _, f := range []struct {
		over *Rate
		to   *Rate
	}{{o.Posts, &base.Posts}, {o.Rooms, &base.Rooms}, {o.Uploads, &base.Uploads}, {o.Bridge, &base.Bridge}} {
		if f.over != nil {
			*f.to = *f.over
		}
	}
	if o.Sockets != nil {
		base.Sockets = *o.Sockets
	}
	return base
}

// Validate checks the overrides' bounds.
func (o *BudgetOverrides) Validate() error {
	if o != nil && o.Sockets != nil && (*o.Sockets < 0 || *o.Sockets > MaxSockets) {
		return fmt.Errorf("sockets is 0 (no limit) to %d", MaxSockets)
	}
	return nil
}

// SocketAllowed decides whether a person holding open sockets may open
// one more under limit (0: no limit).
func SocketAllowed(open, limit int) bool { return limit <= 0 || open < limit }
