package bench

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wheelhouse-dev/wheelhouse/room"
	"github.com/wheelhouse-dev/wheelhouse/store"
)

// SearchResult is the search latency beside its baseline.
type SearchResult struct {
	Messages    int     `json:"messages"`
	Fill        Rate    `json:"fill"` // how fast the messages went in (posts, indexed)
	Hub         Dist    `json:"hub"`
	Raw         Dist    `json:"raw"`
	HitsPerTerm float64 `json:"hitsPerQuery"` // average results per query (at most the page)
	RatioP50    float64 `json:"ratioP50"`
	RatioP99    float64 `json:"ratioP99"`
}

// words is a vocabulary of made-up words; messages draw from it with a
// Zipf distribution, so a few words are very common, as in chat.
func words(n int) []string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		w := make([]byte, 3+r.IntN(6))
		for j := range w {
			w[j] = letters[r.IntN(len(letters))]
		}
		out[i] = string(w) + fmt.Sprint(i%10)
	}
	return out
}

// SearchLatency fills a room with n messages (posted through the hub, so
// they are indexed as in use), then times q searches over HTTP — the hub:
// authentication, membership, the FTS5 query with snippets, the messages
// read back — against the baseline: the same FTS5 query (match, newest
// first, snippet, 20 rows) run directly on the same database file.
func SearchLatency(ctx context.Context, n, q int) (SearchResult, error) {
	e, err := newEnv(ctx, envOptions{})
	if err != nil {
		return SearchResult{}, err
	}
	defer e.close()
	rs := e.h.Rooms()
	vocab := words(5000)
	z := rand.NewZipf(rand.New(rand.NewPCG(3, 4)), 1.1, 1, uint64(len(vocab)-1))
	texts := make([]string, n)
	for i := range texts {
		ws := make([]string, 6+i%8)
		for j := range ws {
			ws[j] = vocab[z.Uint64()]
		}
		texts[i] = strings.Join(ws, " ")
	}
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	start, cpu0 := time.Now(), cpuTime()
	for w := 0; w < 64; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				if _, err := rs.PostWith(ctx, e.admin, "bench", room.PostInput{Text: texts[i]}); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fill := newRate(n, time.Since(start), cpuTime()-cpu0)
	if f := failed.Load(); f > 0 {
		return SearchResult{}, fmt.Errorf("%d of %d posts failed", f, n)
	}
	// Queries: common words, rarer words, prefixes and two-word phrases.
	qr := rand.New(rand.NewPCG(5, 6))
	queries := make([]string, q)
	for i := range queries {
		switch i % 4 {
		case 0:
			queries[i] = vocab[qr.IntN(20)]
		case 1:
			queries[i] = vocab[100+qr.IntN(2000)]
		case 2:
			queries[i] = vocab[qr.IntN(500)][:3] + "*"
		default:
			t := texts[qr.IntN(n)]
			f := strings.Fields(t)
			queries[i] = `"` + f[0] + " " + f[1] + `"`
		}
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.dir, store.DBFile)+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return SearchResult{}, err
	}
	defer db.Close()
	client := &http.Client{}
	var hub, raw []time.Duration
	hits := 0
	for _, s := range queries {
		match, err := store.FTSQuery(s)
		if err != nil {
			return SearchResult{}, err
		}
		t0 := time.Now()
		rows, err := db.QueryContext(ctx, `SELECT rowid, snippet(messages_fts, 0, char(2), char(3), '…', 16) FROM messages_fts
			WHERE messages_fts MATCH ? ORDER BY rowid DESC LIMIT 20`, match)
		if err != nil {
			return SearchResult{}, fmt.Errorf("raw query %q: %w", match, err)
		}
		for rows.Next() {
			var id int64
			var snip string
			rows.Scan(&id, &snip)
			hits++
		}
		rows.Close()
		raw = append(raw, time.Since(t0))

		req, _ := http.NewRequestWithContext(ctx, "GET", e.url("/api/v1/search?q="+url.QueryEscape(s)), nil)
		req.Header.Set("Authorization", "Bearer "+e.token)
		t0 = time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return SearchResult{}, err
		}
		drain(resp)
		hub = append(hub, time.Since(t0))
		if resp.StatusCode != 200 {
			return SearchResult{}, fmt.Errorf("search %q: %s", s, resp.Status)
		}
	}
	r := SearchResult{Messages: n, Fill: fill, Hub: dist(hub), Raw: dist(raw), HitsPerTerm: float64(hits) / float64(q)}
	r.RatioP50, r.RatioP99 = durRatio(r.Hub.P50, r.Raw.P50), durRatio(r.Hub.P99, r.Raw.P99)
	return r, nil
}
