package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/wheelhouse-dev/wheelhouse/internal/netcork"
)

// RoomOptions shape the fan-out run: one room whose members each have a
// socket open, and busy rooms of some of them posting at the same time.
type RoomOptions struct {
	Members   int     `json:"members"`   // distinct people in the measured room, one socket each
	Messages  int     `json:"messages"`  // posted to it, one after another
	BusyRooms int     `json:"busyRooms"` // other rooms posting meanwhile
	BusyRate  float64 `json:"busyRate"`  // messages per second in each busy room
}

// busyMembers is how many of the members each busy room has.
func (o RoomOptions) busyMembers() int {
	if o.BusyRooms == 0 {
		return 0
	}
	return max(1, o.Members/o.BusyRooms)
}

// interval spaces the measured room's messages so one round of fan-out
// mostly ends before the next (latency, not queueing under overload).
func (o RoomOptions) interval() time.Duration {
	return max(20*time.Millisecond, time.Duration(o.Members)*30*time.Microsecond)
}

// fanSamples are one run's latencies and the CPU it took.
type fanSamples struct {
	main, busy []time.Duration
	cpu        time.Duration
	frames     int
}

// add pools another run's samples.
func (f *fanSamples) add(g fanSamples) {
	f.main, f.busy = append(f.main, g.main...), append(f.busy, g.busy...)
	f.cpu += g.cpu
	f.frames += g.frames
}

func (f fanSamples) cpuPerFrame() float64 { return micros(f.cpu) / float64(max(1, f.frames)) }

// RoomResult is a fan-out measurement, hub beside the raw baseline, each
// run twice in the order baseline, hub, hub, baseline and pooled, so that
// neither side gains from running later in the process.
type RoomResult struct {
	RoomOptions
	BusyMembers int  `json:"busyMembers"`
	Hub         Dist `json:"hub"`
	Raw         Dist `json:"raw"`
	HubBusy     Dist `json:"hubBusy"`
	RawBusy     Dist `json:"rawBusy"`
	// CPU per frame received (process CPU over the run, clients included).
	HubCPUMicros float64 `json:"hubCpuMicrosPerFrame"`
	RawCPUMicros float64 `json:"rawCpuMicrosPerFrame"`
	RatioP50     float64 `json:"ratioP50"`
	RatioP99     float64 `json:"ratioP99"`
}

// schedule posts the measured room's messages one after another and the
// busy rooms' at their rate until the measured ones are done; post(room,
// text) returns when the message is sent. Room -1 is the measured room.
func schedule(ctx context.Context, o RoomOptions, post func(room int, text string) error) (sentMain, sentBusy map[int]time.Time, err error) {
	sentMain, sentBusy = map[int]time.Time{}, map[int]time.Time{}
	var mu sync.Mutex
	var busyN atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var busyErr atomic.Pointer[error]
	for r := range o.BusyRooms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(time.Duration(float64(time.Second) / o.BusyRate))
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
				}
				k := int(busyN.Add(1))
				at := time.Now()
				if err := post(r, "chatter-"+strconv.Itoa(k)); err != nil {
					busyErr.CompareAndSwap(nil, &err)
					return
				}
				mu.Lock()
				sentBusy[k] = at
				mu.Unlock()
			}
		}()
	}
	for k := range o.Messages {
		at := time.Now()
		if err = post(-1, "mark-"+strconv.Itoa(k)); err != nil {
			break
		}
		mu.Lock()
		sentMain[k] = at
		mu.Unlock()
		select {
		case <-time.After(o.interval()):
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			break
		}
	}
	close(stop)
	wg.Wait()
	if p := busyErr.Load(); p != nil && err == nil {
		err = *p
	}
	return sentMain, sentBusy, err
}

func frames(ss *sockets) int {
	n := 0
	for _, s := range ss.subs {
		s.mu.Lock()
		n += len(s.main) + len(s.busy)
		s.mu.Unlock()
	}
	return n
}

// RoomFanout measures post → receive through the hub: Members distinct
// people, all members of room "all" with one live socket each; BusyRooms
// rooms of Members/BusyRooms of them post meanwhile. Latency is receipt −
// the moment the POST started.
func RoomFanout(ctx context.Context, o RoomOptions) (fanSamples, error) {
	e, err := newEnv(ctx, envOptions{})
	if err != nil {
		return fanSamples{}, err
	}
	defer e.close()
	people, err := e.addPeople(ctx, "u", o.Members)
	if err != nil {
		return fanSamples{}, err
	}
	rs := e.h.Rooms()
	if _, err := rs.CreateRoom(ctx, e.admin, "all", false, ""); err != nil {
		return fanSamples{}, err
	}
	if err := e.addMembers(ctx, "all", people); err != nil {
		return fanSamples{}, err
	}
	bm := o.busyMembers()
	for r := range o.BusyRooms {
		name := fmt.Sprintf("busy-%d", r)
		if _, err := rs.CreateRoom(ctx, e.admin, name, false, ""); err != nil {
			return fanSamples{}, err
		}
		if err := e.addMembers(ctx, name, people[r*bm:min((r+1)*bm, len(people))]); err != nil {
			return fanSamples{}, err
		}
	}
	tokens := make([]string, len(people))
	for i, p := range people {
		tokens[i] = p.token
	}
	url := e.wsURL(fmt.Sprintf("/api/v1/events?since=%d", rs.Log.Applied()))
	ss, err := dialSockets(ctx, func(i int) (string, string) { return url, tokens[i] }, len(tokens), o.Messages)
	if err != nil {
		return fanSamples{}, err
	}
	defer ss.close()
	clients := make([]*http.Client, o.BusyRooms+1)
	for i := range clients {
		clients[i] = &http.Client{}
	}
	cpu0 := cpuTime()
	sentMain, sentBusy, err := schedule(ctx, o, func(room int, text string) error {
		name := "all"
		if room >= 0 {
			name = fmt.Sprintf("busy-%d", room)
		}
		_, err := e.post(ctx, clients[room+1], e.token, name, text)
		return err
	})
	if err != nil {
		return fanSamples{}, err
	}
	var f fanSamples
	f.main, f.busy, err = ss.collect(sentMain, sentBusy, time.Minute)
	f.cpu, f.frames = cpuTime()-cpu0, frames(ss)
	return f, err
}

// RawRoomFanout is the baseline, a lower bound for the same work: a bare
// coder/websocket server with the same sockets, frames of the same size on
// the same schedule, one writer per connection sending what is queued in
// one write (the hub's writer, without the hub). Latency is receipt − the
// moment the frame was handed to the writers.
func RawRoomFanout(ctx context.Context, o RoomOptions) (fanSamples, error) {
	type rawConn struct {
		ws   *websocket.Conn
		cork *netcork.Conn
		mu   sync.Mutex
		q    [][]byte
		wake chan struct{}
	}
	conns := make([]*rawConn, o.Members)
	var registered sync.WaitGroup
	registered.Add(o.Members)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(r.URL.Query().Get("i"))
		if err != nil || i < 0 || i >= len(conns) || conns[i] != nil {
			http.Error(w, "bad socket number", http.StatusBadRequest)
			return
		}
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		c := &rawConn{ws: ws, cork: netcork.From(r.Context()), wake: make(chan struct{}, 1)}
		conns[i] = c
		registered.Done()
		ctx := ws.CloseRead(r.Context())
		if ws.Write(ctx, websocket.MessageText, []byte(`{"type":"ready"}`)) != nil {
			return
		}
		var batch [][]byte
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.wake:
			}
			c.mu.Lock()
			batch, c.q = c.q, batch[:0]
			c.mu.Unlock()
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if len(batch) > 1 && c.cork != nil {
				c.cork.Cork()
			}
			for _, b := range batch {
				if ws.Write(wctx, websocket.MessageText, b) != nil {
					break
				}
			}
			var err error
			if c.cork != nil {
				err = c.cork.Flush(10 * time.Second)
			}
			cancel()
			if err != nil {
				return
			}
		}
	}))
	srv.Listener = netcork.Listener{Listener: srv.Listener}
	srv.Config.ConnContext = netcork.ConnContext
	srv.Start()
	defer srv.Close()
	base := strings.Replace(srv.URL, "http", "ws", 1)
	ss, err := dialSockets(ctx, func(i int) (string, string) { return base + "/?i=" + strconv.Itoa(i), "" }, o.Members, o.Messages)
	if err != nil {
		return fanSamples{}, err
	}
	defer ss.close()
	registered.Wait()
	send := func(to []*rawConn, b []byte) {
		for _, c := range to {
			c.mu.Lock()
			c.q = append(c.q, b)
			c.mu.Unlock()
			select {
			case c.wake <- struct{}{}:
			default:
			}
		}
	}
	bm := o.busyMembers()
	var seq atomic.Int64
	cpu0 := cpuTime()
	sentMain, sentBusy, err := schedule(ctx, o, func(room int, text string) error {
		to, name := conns, "all"
		if room >= 0 {
			to, name = conns[room*bm:min((room+1)*bm, len(conns))], fmt.Sprintf("busy-%d", room)
		}
		send(to, sampleFrame(seq.Add(1), name, text))
		return nil
	})
	if err != nil {
		return fanSamples{}, err
	}
	var f fanSamples
	f.main, f.busy, err = ss.collect(sentMain, sentBusy, time.Minute)
	f.cpu, f.frames = cpuTime()-cpu0, frames(ss)
	return f, err
}

// sampleFrame is a message frame of the size and shape the hub sends.
func sampleFrame(id int64, room, text string) []byte {
	at := time.Now().UTC().Format(time.RFC3339Nano)
	return fmt.Appendf(nil, `{"id":%d,"type":"message","room":%q,"at":%q,"data":{"id":%d,"room":%q,"authorKind":"user","author":"bench","text":%q,"mentions":[],"parts":[],"createdAt":%q}}`,
		id, room, at, id, room, text, at)
}
