package store

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/chat"
	"github.com/wheelhouse-dev/wheelhouse/wire"
)

// benchStore is a store with a room of members people and, when agent is
// set, an agent in it whose owner is the first member.
type benchStore struct {
	s   *Store
	seq uint64
}

func (b *benchStore) apply(tb testing.TB, evs ...chat.Event) {
	tb.Helper()
	outs, _, err := b.s.Apply(context.Background(), entries(tb, b, evs...))
	if err != nil {
		tb.Fatal(err)
	}
	for _, o := range outs {
		if o.Err != nil {
			tb.Fatal(o.Err)
		}
	}
}

func event(tb testing.TB, typ string, data any) chat.Event {
	ev, err := chat.NewEvent(typ, time.Now(), data)
	if err != nil {
		tb.Fatal(err)
	}
	return ev
}

func newBenchStore(tb testing.TB, members int, agent bool) *benchStore {
	s, err := Open(context.Background(), tb.TempDir(), nil, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	b := &benchStore{s: s}
	var evs []chat.Event
	for i := range members {
		evs = append(evs, event(tb, chat.EvUserCreated, chat.UserCreated{Name: fmt.Sprintf("u%d", i), PasswordHash: "x"}))
	}
	evs = append(evs, event(tb, chat.EvRoomCreated, chat.RoomCreated{Name: "r", Kind: chat.KindRoom, Creator: "u0"}))
	for i := 1; i < members; i++ {
		evs = append(evs, event(tb, chat.EvMemberAdded, chat.MemberChange{Room: "r", User: fmt.Sprintf("u%d", i), By: "u0"}))
	}
	b.apply(tb, evs...)
	if agent {
		exp := time.Now().Add(time.Hour)
		b.apply(tb, event(tb, chat.EvPairingCreated, chat.PairingCreated{TokenHash: "t", Owner: "u0", ExpiresAt: exp}))
		b.apply(tb, event(tb, chat.EvBridgePaired, chat.BridgePaired{ID: "b1", TokenHash: "t", PublicKey: "k", Name: "m"}))
		b.apply(tb, event(tb, chat.EvAgentRegistered, chat.AgentRegistered{Bridge: "b1", Name: "a", Harness: "demo", CanSteer: true, Policy: wire.Policy{Address: "members"}}))
		b.apply(tb, event(tb, chat.EvAgentAdded, chat.AgentRoomChange{Room: "r", Handle: "u0/a", By: "u0"}))
	}
	return b
}

func messageEvent(tb testing.TB, author, text string) chat.Event {
	return event(tb, chat.EvMessagePosted, chat.MessagePosted{Room: "r", AuthorKind: chat.AuthorUser, Author: author, Text: text,
		Mentions: chat.ParseMentions(text), Route: true})
}

// BenchmarkApplyMessage is the projector's cost per posted message, by
// room size and batch size (the projector applies what is waiting in one
// transaction).
func BenchmarkApplyMessage(b *testing.B) {
	for _, members := range []int{1, 1000} {
		for _, batch := range []int{1, 32} {
			b.Run(fmt.Sprintf("members=%d/batch=%d", members, batch), func(b *testing.B) {
				bs := newBenchStore(b, members, false)
				evs := make([]chat.Event, batch)
				b.ResetTimer()
				cpu := cpuTime()
				for i := 0; i < b.N; i += batch {
					for j := range evs {
						evs[j] = messageEvent(b, "u0", "hello")
					}
					bs.apply(b, evs...)
				}
				reportCPU(b, cpu)
			})
		}
	}
}

// BenchmarkApplyMention is a message that mentions an agent: the steer,
// its timeline entry and its receipt are recorded with it.
func BenchmarkApplyMention(b *testing.B) {
	bs := newBenchStore(b, 2, true)
	b.ResetTimer()
	cpu := cpuTime()
	for b.Loop() {
		bs.apply(b, messageEvent(b, "u1", "@u0/a hello"))
	}
	reportCPU(b, cpu)
}

// cpuTime is the process's CPU time (user and system): on a shared machine
// it moves less than the wall clock.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric(float64(cpuTime()-since)/float64(b.N), "cpu-ns/op")
}
