package authz

import (
	"encoding/json"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Rate
		ok   bool
	}{
		{"300/5m", Rate{300, 5 * time.Minute}, true},
		{" 50 / 1h ", Rate{50, time.Hour}, true},
		{"off", Rate{}, true},
		{"0", Rate{}, true},
		{"300", Rate{}, false},
		{"0/1m", Rate{}, false},
		{"-1/1m", Rate{}, false},
		{"10/0s", Rate{}, false},
		{"10/500ms", Rate{}, false},
		{"10/200h", Rate{}, false},
		{"2000000/1h", Rate{}, false},
	} {
		got, err := ParseRate(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v ok=%v", c.in, got, err, c.want, c.ok)
		}
	}
	t.Run("StringRoundTrips", func(t *testing.T) {
		for _, r := range []Rate{{300, 5 * time.Minute}, {50, time.Hour}, {3, 90 * time.Second}, {}} {
			b, _ := json.Marshal(r)
			var back Rate
			if err := json.Unmarshal(b, &back); err != nil || back != r {
				t.Errorf("%v → %s → %v (%v)", r, b, back, err)
			}
		}
	})
}

func TestTake(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	r := Rate{N: 3, Per: 3 * time.Second} // one token a second
	var b Bucket
	for i := range 3 {
		var w time.Duration
		if b, w = Take(b, r, t0, false); w != 0 {
			t.Fatalf("take %d of a full bucket waits %v", i, w)
		}
	}
	t.Run("EmptyWaitsForOneToken", func(t *testing.T) {
		nb, w := Take(b, r, t0, false)
		if w != time.Second || nb != b {
			t.Fatalf("wait %v, bucket %+v → %+v", w, b, nb)
		}
		if _, w := Take(b, r, t0.Add(400*time.Millisecond), false); w != 600*time.Millisecond {
			t.Fatalf("after 0.4 s: wait %v, want 0.6 s", w)
		}
	})
	t.Run("RefillsOverTime", func(t *testing.T) {
		if _, w := Take(b, r, t0.Add(time.Second), false); w != 0 {
			t.Fatalf("after a second: wait %v", w)
		}
	})
	t.Run("NeverAboveBurst", func(t *testing.T) {
		nb, _ := Take(b, r, t0.Add(time.Hour), false)
		if nb.Tokens != 2 {
			t.Fatalf("after an hour and one take: %v tokens, want 2", nb.Tokens)
		}
	})
	t.Run("ReserveTakesAndSaysHowLongToPause", func(t *testing.T) {
		nb, w := Take(b, r, t0, true)
		if w != time.Second || nb.Tokens != -1 {
			t.Fatalf("reserve: wait %v tokens %v", w, nb.Tokens)
		}
		nb, w = Take(nb, r, t0, true)
		if w != 2*time.Second {
			t.Fatalf("second reservation: wait %v", w)
		}
		for range 5 {
			nb, _ = Take(nb, r, t0, true)
		}
		if nb.Tokens < -3 {
			t.Fatalf("debt beyond one burst: %v", nb.Tokens)
		}
	})
	t.Run("ARateChangeKeepsWhatWasSpent", func(t *testing.T) {
		nb, w := Take(b, Rate{N: 10, Per: 10 * time.Second}, t0, false)
		if w != 0 || nb.Tokens != 6 {
			t.Fatalf("3 spent of a bucket grown to 10: wait %v, %v tokens left, want 6", w, nb.Tokens)
		}
		if _, w := Take(b, Rate{N: 2, Per: 2 * time.Second}, t0, false); w != 2*time.Second {
			t.Fatalf("3 spent of a bucket shrunk to 2: wait %v, want 2 s", w)
		}
	})
	t.Run("OffAllowsEverything", func(t *testing.T) {
		if _, w := Take(b, Rate{}, t0, false); w != 0 {
			t.Fatal(w)
		}
	})
}

func TestBudgetOverrides(t *testing.T) {
	base := Budgets{Posts: Rate{300, 5 * time.Minute}, Rooms: Rate{50, time.Hour}, Sockets: 50}
	var o *BudgetOverrides
	if o.Over(base) != base {
		t.Fatal("nil overrides change the limits")
	}
	var in BudgetOverrides
	if err := json.Unmarshal([]byte(`{"posts":"10/1m","sockets":0}`), &in); err != nil {
		t.Fatal(err)
	}
	got := in.Over(base)
	if got.Posts != (Rate{10, time.Minute}) || got.Rooms != base.Rooms || got.Sockets != 0 {
		t.Fatalf("%+v", got)
	}
	n := MaxSockets + 1
	if (&BudgetOverrides{Sockets: &n}).Validate() == nil {
		t.Fatal("sockets beyond the bound accepted")
	}
	for _, c := range []struct {
		open, limit int
		ok          bool
	}{{0, 0, true}, {49, 50, true}, {50, 50, false}, {1000, 0, true}} {
		if SocketAllowed(c.open, c.limit) != c.ok {
			t.Errorf("SocketAllowed(%d, %d) != %v", c.open, c.limit, c.ok)
		}
	}
}
