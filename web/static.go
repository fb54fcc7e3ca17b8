package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
)

//go:embed static
var staticFS embed.FS

// staticHandler serves the embedded browser UI. Every asset is in the
// binary: no CDN, no external fonts.
//
// Two things make a page load quick without a build step. index.html gets,
// at start, a <link rel="modulepreload"> for every ES module app.js reaches
// through static imports, so the browser fetches them all at once instead
// of one level of imports after another. And every file carries an ETag
// (its content's digest) with Cache-Control: no-cache, so a reload
// revalidates each file (304, no body) and a new binary's files are never
// served stale.
func staticHandler() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	files := http.FileServer(http.FS(sub))
	etags := map[string]string{}
	fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := fs.ReadFile(sub, p); err == nil {
				etags[p] = etag(b)
			}
		}
		return nil
	})
	index := indexWithPreloads(sub)
	indexTag := etag(index)
	serveIndex := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("ETag", indexTag)
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(index))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		p := trimSlash(r.URL.Path)
		// Client-side routes fall back to the app shell.
		if st, err := fs.Stat(sub, p); err != nil || st.IsDir() || p == "index.html" {
			if err == nil && st.IsDir() && p != "." {
				files.ServeHTTP(w, r) // a folder's listing or redirect, as before
				return
			}
			serveIndex(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("ETag", etags[p])
		files.ServeHTTP(w, r)
	})
}

func etag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`
}

// importRE finds the specifiers of static imports and re-exports
// (`import … from '…'`, `export … from '…'`, `import '…'`).
var importRE = regexp.MustCompile(`(?:\bfrom\s*|\bimport\s*)['"]([^'"\n]+)['"]`)

// modulesFrom lists the embedded modules the module at entry reaches
// through static imports, entry excluded, in a stable order. Dynamic
// imports (import('…')) are left to load when used. A specifier that names
// no embedded file is skipped.
func modulesFrom(sub fs.FS, entry string) []string {
	seen := map[string]bool{entry: true}
	queue := []string{entry}
	var out []string
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			continue
		}
		for _, m := range importRE.FindAllSubmatch(b, -1) {
			spec := string(m[1])
			var q string
			switch {
			case strings.HasPrefix(spec, "./"), strings.HasPrefix(spec, "../"):
				q = path.Join(path.Dir(p), spec)
			case strings.HasPrefix(spec, "/"):
				q = strings.TrimPrefix(path.Clean(spec), "/")
			default:
				continue
			}
			if seen[q] {
				continue
			}
			if _, err := fs.Stat(sub, q); err != nil {
				continue
			}
			seen[q] = true
			out = append(out, q)
			queue = append(queue, q)
		}
	}
	slices.Sort(out)
	return out
}

// indexWithPreloads is index.html with a modulepreload link for every
// module its module script reaches, right after that script.
func indexWithPreloads(sub fs.FS) []byte {
	index, _ := fs.ReadFile(sub, "index.html")
	const script = `<script type="module" src="/js/app.js"></script>`
	i := bytes.Index(index, []byte(script))
	if i < 0 {
		return index
	}
	var links strings.Builder
	for _, m := range modulesFrom(sub, "js/app.js") {
		links.WriteString("\n<link rel=\"modulepreload\" href=\"/" + m + "\">")
	}
	end := i + len(script)
	return slices.Concat(index[:end], []byte(links.String()), index[end:])
}

func trimSlash(p string) string {
	for len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	if p == "" {
		return "."
	}
	return p
}
