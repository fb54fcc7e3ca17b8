package web

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The UI must work under the strict CSP and offline: no inline scripts or
// styles, no external URLs, every referenced asset embedded and served
// with its type.
func TestStaticAssets(t *testing.T) {
	h := staticHandler()
	get := func(path string) (int, string, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		b, _ := io.ReadAll(rec.Body)
		return rec.Code, rec.Header().Get("Content-Type"), string(b)
	}
	code, ct, index := get("/")
	if code != 200 || !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("index: %d %s", code, ct)
	}
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(index) || strings.Contains(index, " style=") || strings.Contains(index, "onclick=") {
		t.Fatal("index.html has inline script, style or handlers: the CSP forbids them")
	}
	sub, _ := fs.Sub(staticFS, "static")
	fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if d.IsDir() {
			return nil
		}
		b, _ := fs.ReadFile(sub, p)
		if strings.HasPrefix(p, "vendor/") {
			return nil // comments name their projects; TestVendoredFiles pins the bytes
		}
		for _, ext := range []string{"http://", "https://"} {
			for _, m := range regexp.MustCompile(regexp.QuoteMeta(ext)+`[^\s"'`+"`"+`)]+`).FindAllString(string(b), -1) {
				if !strings.Contains(m, "www.w3.org") { // SVG namespaces are identifiers, not fetches
					t.Errorf("%s references %s: the UI must not load anything from elsewhere", p, m)
				}
			}
		}
		return nil
	})
	for _, ref := range regexp.MustCompile(`(?:src|href)="(/[^"]+)"`).FindAllStringSubmatch(index, -1) {
		code, ct, _ := get(ref[1])
		if code != 200 {
			t.Errorf("%s: %d", ref[1], code)
		}
		want := map[string]string{".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
		for ext, typ := range want {
			if strings.HasSuffix(ref[1], ext) && !strings.HasPrefix(ct, typ) {
				t.Errorf("%s served as %q, want %s", ref[1], ct, typ)
			}
		}
	}
	if code, _, body := get("/rooms/general"); code != 200 || body != index {
		t.Errorf("client routes should get the app shell: %d", code)
	}
}

// The vendored libraries are the npm packages' files, unchanged: each
// matches its line in vendor/SHA256SUMS, and nothing else is there but
// licences and the README.
func TestVendoredFiles(t *testing.T) {
	sub, _ := fs.Sub(staticFS, "static/vendor")
	sums, err := fs.ReadFile(sub, "SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(sums)))
	for sc.Scan() {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: bad line %q", sc.Text())
		}
		b, err := fs.ReadFile(sub, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := sha256.Sum256(b)
		if hex.EncodeToString(got[:]) != want {
			t.Errorf("vendor/%s changed: its SHA-256 is not the one in SHA256SUMS (see vendor/README.md)", name)
		}
		pinned[name] = true
	}
	fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if d.IsDir() || pinned[p] || p == "SHA256SUMS" || p == "README.md" || strings.Contains(p, "LICENSE") {
			return nil
		}
		t.Errorf("vendor/%s is neither pinned in SHA256SUMS nor a licence", p)
		return nil
	})
	if len(pinned) == 0 {
		t.Fatal("SHA256SUMS pins nothing")
	}
}

// index.html preloads every module app.js reaches through static imports
// (so the browser fetches them in one wave, not one import level at a
// time), each of which is embedded; every file revalidates by its ETag.
func TestStaticPreloadsAndRevalidates(t *testing.T) {
	h := staticHandler()
	get := func(path, inm string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", path, nil)
		if inm != "" {
			req.Header.Set("If-None-Match", inm)
		}
		h.ServeHTTP(rec, req)
		return rec
	}
	index := get("/", "").Body.String()
	var pre []string
	for _, m := range regexp.MustCompile(`<link rel="modulepreload" href="(/[^"]+)">`).FindAllStringSubmatch(index, -1) {
		pre = append(pre, m[1])
	}
	for _, want := range []string{"/js/api.js", "/js/render/markdown.js", "/vendor/marked/marked.esm.js", "/vendor/dompurify/purify.es.mjs"} {
		if !slices.Contains(pre, want) {
			t.Errorf("index.html does not preload %s: %v", want, pre)
		}
	}
	if len(pre) < 30 {
		t.Errorf("only %d modules preloaded", len(pre))
	}
	for _, p := range append(pre, "/", "/r/somewhere", "/css/base.css") {
		rec := get(p, "")
		tag := rec.Header().Get("ETag")
		if rec.Code != 200 || tag == "" || rec.Header().Get("Cache-Control") != "no-cache" {
			t.Fatalf("%s: %d, ETag %q, Cache-Control %q", p, rec.Code, tag, rec.Header().Get("Cache-Control"))
		}
		if again := get(p, tag); again.Code != 304 {
			t.Errorf("%s with If-None-Match its ETag: %d, want 304", p, again.Code)
		}
	}
	if get("/r/somewhere", "").Body.String() != index {
		t.Error("a client-side route does not get the same app shell")
	}
}
