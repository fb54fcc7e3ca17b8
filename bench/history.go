package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// The history section grows a hub to N messages and measures what a team
// meets after months of use, beside the same figures at N/10: disk bytes
// per message, a rebuild of the projection from the log, search, paging,
// the room list, the hub's memory, and (in headless Chromium, see
// browser.go) opening a room and switching rooms.

// historyRooms is how many rooms the messages go to: half of them to the
// room "bench", the rest spread evenly over the others.
const historyRooms = 10

// HistoryResult is the history section: one entry per size, smallest first.
type HistoryResult struct {
	Sizes []HistorySize `json:"sizes"`
}

// HistorySize is every figure at one size.
type HistorySize struct {
	Messages int  `json:"messages"`
	Rooms    int  `json:"rooms"`
	Fill     Rate `json:"fill"` // the load: posts through the service, acknowledged and projected
	// Bytes on disk per message after the load, the hub still running:
	// the JetStream store, the SQLite file and its WAL.
	LogBytesPerMsg float64 `json:"logBytesPerMessage"`
	DBBytesPerMsg  float64 `json:"sqliteBytesPerMessage"`
	WALBytesPerMsg float64 `json:"walBytesPerMessage"`
	// Rebuild is the projection rebuilt from the log (the SQLite files
	// deleted), events per second, from the hub's start to /readyz ready.
	Rebuild Rate `json:"rebuild"`
	// Over the hub's own HTTPS, one request after another.
	SearchWord   Dist `json:"searchWord"`
	SearchPrefix Dist `json:"searchPrefix"`
	LatestPage   Dist `json:"latestPage"`
	FarBackPage  Dist `json:"farBackPage"` // a page in the oldest tenth of the room
	RoomList     Dist `json:"roomList"`    // GET /rooms
	// RSS of the hub's process after the measurements and a collection.
	RSSBytes uint64 `json:"rssBytes"`
	// Browser is opening and switching rooms, per profile; empty when
	// Chromium is not here (BrowserSkipped says why).
	Browser        []BrowserResult `json:"browser,omitempty"`
	BrowserSkipped string          `json:"browserSkipped,omitempty"`
}

func (r *HistoryResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "History (messages over %d rooms, half in the room opened; the hub in a child process over its own HTTPS)\n", historyRooms)
	row := func(name string, f func(s HistorySize) string) {
		fmt.Fprintf(&b, "  %-42s", name)
		for _, s := range r.Sizes {
			fmt.Fprintf(&b, "  %-40s", f(s))
		}
		b.WriteString("\n")
	}
	row("messages", func(s HistorySize) string { return fmt.Sprint(s.Messages) })
	row("load (posts, acknowledged)", func(s HistorySize) string { return fmt.Sprintf("%.0f/s", s.Fill.PerSecond) })
	row("disk B/msg: log, SQLite, WAL", func(s HistorySize) string {
		return fmt.Sprintf("%.0f, %.0f, %.0f", s.LogBytesPerMsg, s.DBBytesPerMsg, s.WALBytesPerMsg)
	})
	row("rebuild", func(s HistorySize) string {
		return fmt.Sprintf("%.0f events/s (%.1f s)", s.Rebuild.PerSecond, s.Rebuild.Seconds)
	})
	p99 := func(d Dist) string { return fmt.Sprintf("p50 %s p99 %s", round(d.P50), round(d.P99)) }
	row("search, whole word", func(s HistorySize) string { return p99(s.SearchWord) })
	row("search, prefix", func(s HistorySize) string { return p99(s.SearchPrefix) })
	row("latest page (50)", func(s HistorySize) string { return p99(s.LatestPage) })
	row("far-back page (50)", func(s HistorySize) string { return p99(s.FarBackPage) })
	row("GET /rooms", func(s HistorySize) string { return p99(s.RoomList) })
	row("hub RSS", func(s HistorySize) string { return fmt.Sprintf("%.1f MiB", float64(s.RSSBytes)/(1<<20)) })
	if len(r.Sizes) > 0 && len(r.Sizes[0].Browser) > 0 {
		for i, br := range r.Sizes[0].Browser {
			row(br.Profile+": open (reload)", func(s HistorySize) string {
				if i >= len(s.Browser) {
					return "-"
				}
				return fmt.Sprintf("%s, %d resources", p99ms(s.Browser[i].Open), s.Browser[i].Resources)
			})
			row(br.Profile+": switch room", func(s HistorySize) string {
				if i >= len(s.Browser) {
					return "-"
				}
				return p99ms(s.Browser[i].Switch)
			})
		}
	} else if len(r.Sizes) > 0 {
		fmt.Fprintf(&b, "  browser: not measured: %s\n", r.Sizes[0].BrowserSkipped)
	}
	return b.String()
}

func p99ms(d Dist) string {
	return fmt.Sprintf("p50 %d ms p99 %d ms", d.P50.Milliseconds(), d.P99.Milliseconds())
}

// History measures the hub at n/10 and at n messages; queries is how many
// requests of each kind are timed, views how many room opens and switches
// each browser profile makes (0: no browser).
func History(ctx context.Context, n, queries, views int) (*HistoryResult, error) {
	res := &HistoryResult{}
	for _, size := range []int{max(n/10, historyRooms*2), n} {
		s, err := historyAt(ctx, size, queries, views)
		if err != nil {
			return nil, fmt.Errorf("at %d messages: %w", size, err)
		}
		res.Sizes = append(res.Sizes, *s)
	}
	return res, nil
}

func historyRoom(i int) string {
	if i == 0 {
		return "bench"
	}
	return fmt.Sprintf("h%d", i)
}

func historyAt(ctx context.Context, n, queries, views int) (*HistorySize, error) {
	dir, err := os.MkdirTemp("", "wheelhouse-bench-history-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	res := &HistorySize{Messages: n, Rooms: historyRooms}
	vocab, oldest, token, err := historyLoad(ctx, dir, n, res)
	if err != nil {
		return nil, err
	}
	// The rebuild: the projection deleted, the hub started on the log
	// alone; it is ready once every event is applied.
	for _, f := range []string{store.DBFile, store.DBFile + "-wal", store.DBFile + "-shm"} {
		if err := os.Remove(filepath.Join(dir, f)); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	cert, err := selfSigned(dir)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	c, err := startChild("hub", childDirEnv+"="+dir, childTLSEnv+"="+cert.certFile+" "+cert.keyFile)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	client := cert.client()
	if err := waitReady(ctx, client, c.URL); err != nil {
		return nil, err
	}
	res.Rebuild = newRate(res.Rebuild.N, time.Since(start), 0)
	res.Rebuild.CPUMicros = 0 // the child's, not measured

	get := func(path string) (time.Duration, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", c.URL+"/api/v1"+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		drain(resp)
		el := time.Since(t0)
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return el, nil
	}
	qr := mrand.New(mrand.NewPCG(7, 8))
	timeAll := func(path func(i int) string) (Dist, error) {
		var ds []time.Duration
		for i := range queries {
			d, err := get(path(i))
			if err != nil {
				return Dist{}, err
			}
			ds = append(ds, d)
		}
		return dist(ds), nil
	}
	for _, m := range []struct {
		d    *Dist
		path func(i int) string
	}{
		{&res.SearchWord, func(i int) string {
			w := vocab[qr.IntN(20)] // common
			if i%2 == 1 {
				w = vocab[100+qr.IntN(2000)] // rarer
			}
			return "/search?q=" + url.QueryEscape(w)
		}},
		{&res.SearchPrefix, func(i int) string { return "/search?q=" + url.QueryEscape(vocab[qr.IntN(500)][:3]+"*") }},
		{&res.LatestPage, func(int) string { return "/rooms/bench/messages?limit=50" }},
		{&res.FarBackPage, func(int) string {
			// a page before a message in the oldest tenth of the room
			return fmt.Sprintf("/rooms/bench/messages?limit=50&before=%d", oldest[qr.IntN(len(oldest))])
		}},
		{&res.RoomList, func(int) string { return "/rooms" }},
	} {
		if *m.d, err = timeAll(m.path); err != nil {
			return nil, err
		}
	}
	if views > 0 {
		res.Browser, err = BrowserViews(ctx, c.URL, cert.spki, "bench", "bench-password", "bench", historyRoom(1), views)
		var nh notHere
		if errors.As(err, &nh) {
			res.BrowserSkipped, err = nh.msg, nil
		}
		if err != nil {
			return nil, fmt.Errorf("browser: %w", err)
		}
	}
	ms, err := c.stats()
	if err != nil {
		return nil, err
	}
	res.RSSBytes = ms.RSS
	return res, nil
}

// historyLoad fills the hub in dir with n messages (words drawn as in the
// search run) and records the disk figures; it returns the vocabulary and
// the ids of the oldest tenth of the room "bench".
func historyLoad(ctx context.Context, dir string, n int, res *HistorySize) (vocab []string, oldest []int64, token string, err error) {
	e, err := newEnv(ctx, envOptions{Dir: dir})
	if err != nil {
		return nil, nil, "", err
	}
	defer e.close()
	rs := e.h.Rooms()
	for i := 1; i < historyRooms; i++ {
		if _, err := rs.CreateRoom(ctx, e.admin, historyRoom(i), false, ""); err != nil {
			return nil, nil, "", err
		}
	}
	vocab = words(5000)
	var next, failed atomic.Int64
	var mu sync.Mutex
	var firstErr error
	inBench := n / 2
	var wg sync.WaitGroup
	start, cpu0 := time.Now(), cpuTime()
	for w := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			z := mrand.NewZipf(mrand.New(mrand.NewPCG(3, uint64(w))), 1.1, 1, uint64(len(vocab)-1))
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				// the first half in "bench", then round the others; each
				// room's last message says so, for the browser to wait on
				roomName := "bench"
				if i >= inBench {
					roomName = historyRoom(1 + (i-inBench)%(historyRooms-1))
				}
				ws := make([]string, 6+i%8)
				for j := range ws {
					ws[j] = vocab[z.Uint64()]
				}
				text := strings.Join(ws, " ")
				if i == inBench-1 || i >= n-(historyRooms-1) {
					text = "end of " + roomName + " history"
				}
				m, err := rs.PostWith(ctx, e.admin, roomName, room.PostInput{Text: text})
				if err != nil {
					if failed.Add(1) == 1 {
						mu.Lock()
						firstErr = err
						mu.Unlock()
					}
					continue
				}
				if i < max(inBench/10, 1) {
					mu.Lock()
					oldest = append(oldest, int64(m.ID))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	res.Fill = newRate(n, time.Since(start), cpuTime()-cpu0)
	if f := failed.Load(); f > 0 {
		return nil, nil, "", fmt.Errorf("%d of %d posts failed, the first: %v", f, n, firstErr)
	}
	// the last message of the room "bench" is posted last of its half only
	// if the workers kept order; post the marker again to be sure
	if _, err := rs.PostWith(ctx, e.admin, "bench", room.PostInput{Text: "end of bench history"}); err != nil {
		return nil, nil, "", err
	}
	info, err := rs.Log.Stream().Info(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	res.Rebuild.N = int(info.State.LastSeq) // the events a rebuild applies
	logBytes, err := dirBytes(filepath.Join(dir, "jetstream"))
	if err != nil {
		return nil, nil, "", err
	}
	size := func(name string) float64 {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return 0
		}
		return float64(st.Size())
	}
	res.LogBytesPerMsg = float64(logBytes) / float64(n)
	res.DBBytesPerMsg = size(store.DBFile) / float64(n)
	res.WALBytesPerMsg = size(store.DBFile+"-wal") / float64(n)
	if len(oldest) == 0 {
		return nil, nil, "", fmt.Errorf("no messages recorded in the room")
	}
	return vocab, oldest, e.token, nil
}

func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// benchCert is a self-signed certificate for 127.0.0.1, for the hub's own
// HTTPS: the bench's client trusts it as its root, Chromium by its key.
type benchCert struct {
	certFile, keyFile string
	spki              string // base64(SHA-256(SubjectPublicKeyInfo))
	pool              *x509.CertPool
}

func selfSigned(dir string) (*benchCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "wheelhouse bench"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	c := &benchCert{certFile: filepath.Join(dir, "bench-cert.pem"), keyFile: filepath.Join(dir, "bench-key.pem"), pool: x509.NewCertPool()}
	c.pool.AddCert(leaf)
	sum := sha256.Sum256(leaf.RawSubjectPublicKeyInfo)
	c.spki = base64.StdEncoding.EncodeToString(sum[:])
	if err := os.WriteFile(c.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	return c, os.WriteFile(c.keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
}

func (c *benchCert) client() *http.Client {
	return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.pool}, ForceAttemptHTTP2: true}}
}

// waitReady polls /readyz until the hub says ready (a hub that answers
// while it catches up says catching-up meanwhile).
func waitReady(ctx context.Context, client *http.Client, base string) error {
	deadline := time.Now().Add(time.Hour)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/readyz", nil)
		resp, err := client.Do(req)
		if err == nil {
			drain(resp)
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the hub was not ready within an hour: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
