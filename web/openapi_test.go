package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wheelhouse-dev/wheelhouse/internal/testhub"
	"github.com/wheelhouse-dev/wheelhouse/web"
)

// The OpenAPI description (web/openapi.json, served at
// /api/v1/openapi.json, copied to docs/) is kept true two ways: every route
// the server registers is in it and every operation in it is a route; and
// every answer the API tests in this package get is checked against its
// schemas (apiClient). The description uses a small subset of JSON Schema
// 2020-12, which the checker below implements in full; a keyword outside it
// fails the test, so the subset stays honest. (A general validator library
// would add a dependency for test code only, for keywords we do not use.)

type openAPI struct {
	doc map[string]any
}

var (
	specOnce sync.Once
	spec     *openAPI
	specErr  error
)

func loadSpec(t testing.TB) *openAPI {
	t.Helper()
	specOnce.Do(func() {
		spec = &openAPI{}
		specErr = json.Unmarshal(web.OpenAPI, &spec.doc)
	})
	if specErr != nil {
		t.Fatalf("web/openapi.json: %v", specErr)
	}
	return spec
}

func (s *openAPI) get(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// deref follows a local $ref.
func (s *openAPI) deref(v any) (map[string]any, error) {
	m, _ := v.(map[string]any)
	for m != nil {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m, nil
		}
		if !strings.HasPrefix(ref, "#/") {
			return nil, fmt.Errorf("non-local $ref %q", ref)
		}
		var cur any = s.doc
		for _, k := range strings.Split(ref[2:], "/") {
			cur = s.get(cur, k)
		}
		if cur == nil {
			return nil, fmt.Errorf("$ref %q resolves to nothing", ref)
		}
		m, _ = cur.(map[string]any)
	}
	return nil, fmt.Errorf("not a schema: %v", v)
}

var knownKeywords = map[string]bool{"type": true, "properties": true, "required": true, "additionalProperties": true, "items": true,
	"enum": true, "$ref": true, "description": true, "format": true, "oneOf": true, "const": true, "pattern": true}

// check validates v (decoded JSON) against schema.
func (s *openAPI) check(at string, schema any, v any) error {
	sc, err := s.deref(schema)
	if err != nil {
		return fmt.Errorf("%s: %v", at, err)
	}
	for k := range sc {
		if !knownKeywords[k] {
			return fmt.Errorf("%s: the schema uses %q, which the checker does not implement", at, k)
		}
	}
	if alts, ok := sc["oneOf"].([]any); ok {
		var errs []string
		n := 0
		for _, a := range alts {
			if err := s.check(at, a, v); err != nil {
				errs = append(errs, err.Error())
			} else {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: matches %d of oneOf's schemas, want 1: %s", at, n, strings.Join(errs, "; "))
		}
	}
	if c, ok := sc["const"]; ok && !equalJSON(c, v) {
		return fmt.Errorf("%s: %v is not %v", at, v, c)
	}
	if e, ok := sc["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return equalJSON(x, v) }) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, e)
	}
	if t, ok := sc["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				types = append(types, x.(string))
			}
		}
		if !slices.Contains(types, jsonType(v)) && !(jsonType(v) == "integer" && slices.Contains(types, "number")) {
			return fmt.Errorf("%s: a %s, want %v", at, jsonType(v), types)
		}
	}
	if p, ok := sc["pattern"].(string); ok {
		str, _ := v.(string)
		if !regexp.MustCompile(p).MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", at, str, p)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := sc["properties"].(map[string]any)
		for _, r := range asStrings(sc["required"]) {
			if _, ok := v[r]; !ok {
				return fmt.Errorf("%s: %q is missing", at, r)
			}
		}
		for k, x := range v {
			ps, ok := props[k]
			if !ok {
				switch ap := sc["additionalProperties"].(type) {
				case bool:
					if ap {
						continue
					}
				case map[string]any:
					ps = ap
				}
				if ps == nil {
					if sc["properties"] == nil && sc["additionalProperties"] == nil && sc["type"] == nil {
						continue // a schema that says nothing of properties (oneOf, const)
					}
					return fmt.Errorf("%s: %q is not in the description", at, k)
				}
			}
			if err := s.check(at+"."+k, ps, x); err != nil {
				return err
			}
		}
	case []any:
		if it, ok := sc["items"]; ok {
			for i, x := range v {
				if err := s.check(at+"["+strconv.Itoa(i)+"]", it, x); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func asStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		out = append(out, x.(string))
	}
	return out
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if v == float64(int64(v)) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// operation finds the description of method on a request path.
func (s *openAPI) operation(method, path string) (tmpl string, op map[string]any) {
	paths, _ := s.doc["paths"].(map[string]any)
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for t, item := range paths {
		ts := strings.Split(strings.Trim(t, "/"), "/")
		if len(ts) != len(segs) {
			continue
		}
		match := true
		for i := range ts {
			if !(strings.HasPrefix(ts[i], "{") && segs[i] != "") && ts[i] != segs[i] {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		o, _ := s.get(item, strings.ToLower(method)).(map[string]any)
		if o != nil && (op == nil || strings.Count(t, "{") < strings.Count(tmpl, "{")) {
			tmpl, op = t, o // a literal segment beats a parameter
		}
	}
	return tmpl, op
}

// checkResponse validates one answer against the description.
func (s *openAPI) checkResponse(method, path string, status int, contentType string, body []byte) error {
	tmpl, op := s.operation(method, path)
	if op == nil {
		return fmt.Errorf("%s %s is not in the description", method, path)
	}
	resps, _ := op["responses"].(map[string]any)
	r, ok := resps[strconv.Itoa(status)]
	if !ok {
		if status < 400 {
			return fmt.Errorf("%s %s: status %d is not described", method, tmpl, status)
		}
		r = resps["default"]
	}
	rm, err := s.deref(r)
	if err != nil {
		return err
	}
	content, _ := rm["content"].(map[string]any)
	if len(content) == 0 {
		if len(bytes.TrimSpace(body)) > 0 {
			return fmt.Errorf("%s %s %d: a body, but the description has none", method, tmpl, status)
		}
		return nil
	}
	if !strings.HasPrefix(contentType, "application/json") {
		if _, ok := content["application/json"]; ok && len(content) == 1 {
			return fmt.Errorf("%s %s %d: Content-Type %q, described as JSON", method, tmpl, status, contentType)
		}
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%s %s %d: not JSON: %v", method, tmpl, status, err)
	}
	return s.check(method+" "+tmpl+" "+strconv.Itoa(status), s.get(content, "application/json", "schema"), v)
}

// checkEvent validates a live event's data against the description of its type.
func (s *openAPI) checkEvent(typ string, data json.RawMessage) error {
	alts, _ := s.get(s.doc, "components", "schemas", "Events", "oneOf").([]any)
	for _, a := range alts {
		if s.get(a, "properties", "type", "const") == typ {
			var v any
			if err := json.Unmarshal(data, &v); err != nil {
				return err
			}
			return s.check("event "+typ, s.get(a, "properties", "data"), v)
		}
	}
	return fmt.Errorf("event type %q is not in the description", typ)
}

// checker is an http.RoundTripper that checks every API answer against the
// description.
type checker struct {
	t    testing.TB
	next http.RoundTripper
	s    *openAPI
}

func (c *checker) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil || !strings.HasPrefix(req.URL.Path, "/api/v1/") || req.URL.Path == "/api/v1/events" {
		return resp, err
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		return resp, nil
	}
	if err := c.s.checkResponse(req.Method, req.URL.EscapedPath(), resp.StatusCode, resp.Header.Get("Content-Type"), body); err != nil {
		c.t.Errorf("the answer does not match web/openapi.json: %v\nbody: %.400s", err, body)
	}
	return resp, nil
}

// apiClient makes c check every answer against the description.
func apiClient(t testing.TB, c *testhub.Client) *testhub.Client {
	next := c.HTTP.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c.HTTP.Transport = &checker{t: t, next: next, s: loadSpec(t)}
	return c
}

// checkEvents validates every event a stream received.
func checkEvents(t testing.TB, st *testhub.Stream) {
	t.Helper()
	s := loadSpec(t)
	for _, e := range st.Events() {
		if e.Type == "reply" && e.Data == nil {
			// An error reply: its error is checked like an HTTP error.
			if e.Error == nil || e.Error.Code == "" || e.Error.Message == "" || e.Status < 400 {
				t.Errorf("an error reply without its error: %+v", e)
			}
			continue
		}
		if err := s.checkEvent(e.Type, e.Data); err != nil {
			t.Errorf("a live event does not match web/openapi.json: %v\ndata: %.400s", err, e.Data)
		}
	}
}

var routeRE = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE) (/api/v1/\S+)$`)

// registeredRoutes reads the route patterns the web package registers.
func registeredRoutes(t *testing.T) []string {
	files, _ := filepath.Glob("*.go")
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil && routeRE.MatchString(v) {
					out = append(out, v)
				}
			}
			return true
		})
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	s := loadSpec(t)
	if s.doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v, want 3.1.0", s.doc["openapi"])
	}
	routes := registeredRoutes(t)
	if len(routes) < 40 {
		t.Fatalf("found only %d routes in the web package's source", len(routes))
	}
	described := map[string]bool{}
	paths, _ := s.doc["paths"].(map[string]any)
	for p, item := range paths {
		for m := range item.(map[string]any) {
			described[strings.ToUpper(m)+" "+p] = true
		}
	}
	for _, r := range routes {
		if !described[r] {
			t.Errorf("route %s is registered but not in web/openapi.json", r)
		}
		delete(described, r)
	}
	for r := range described {
		t.Errorf("web/openapi.json describes %s, which is not a route", r)
	}
	// Every $ref resolves and every schema keeps to the checked subset.
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if _, err := s.deref(v); err != nil {
					t.Errorf("%s: %v (%s)", at, err, ref)
				}
			}
			for k, x := range v {
				walk(at+"/"+k, x)
			}
		case []any:
			for i, x := range v {
				walk(at+"/"+strconv.Itoa(i), x)
			}
		}
	}
	walk("#", s.doc)
	// Every schema keeps to the subset the checker implements.
	var walkSchema func(at string, sc any)
	walkSchema = func(at string, sc any) {
		m, ok := sc.(map[string]any)
		if !ok {
			return
		}
		for k := range m {
			if !knownKeywords[k] {
				t.Errorf("%s: keyword %q is outside the checked subset", at, k)
			}
		}
		props, _ := m["properties"].(map[string]any)
		for k, x := range props {
			walkSchema(at+"/properties/"+k, x)
		}
		walkSchema(at+"/items", m["items"])
		walkSchema(at+"/additionalProperties", m["additionalProperties"])
		for i, x := range asList(m["oneOf"]) {
			walkSchema(at+"/oneOf/"+strconv.Itoa(i), x)
		}
	}
	for name, sc := range s.get(s.doc, "components", "schemas").(map[string]any) {
		walkSchema("#/components/schemas/"+name, sc)
	}
	var findSchemas func(at string, v any)
	findSchemas = func(at string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if k == "schema" {
					walkSchema(at+"/schema", x)
				} else {
					findSchemas(at+"/"+k, x)
				}
			}
		case []any:
			for i, x := range v {
				findSchemas(at+"/"+strconv.Itoa(i), x)
			}
		}
	}
	findSchemas("#/paths", s.doc["paths"])
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func TestOpenAPIServedAndInDocs(t *testing.T) {
	docs, err := os.ReadFile("../docs/openapi.json")
	if err != nil || !bytes.Equal(docs, web.OpenAPI) {
		t.Fatalf("docs/openapi.json differs from web/openapi.json: cp web/openapi.json docs/ (%v)", err)
	}
	h := testhub.Start(t, testhub.Options{})
	c := testhub.NewClient(t, h.URL())
	r := c.Must(200, "GET", "/api/v1/openapi.json", nil)
	if !bytes.Equal(r.Raw, web.OpenAPI) {
		t.Fatal("the hub serves another description than web/openapi.json")
	}
}
