package store

import (
	"strings"
	"testing"
)

func TestFTSQuery(t *testing.T) {
	cases := []struct{ in, want string }{
		{"deploy", `"deploy"`},
		{"deploy failed", `"deploy" "failed"`},
		{"dep*", `"dep"*`},
		{`"websocket handshake"`, `"websocket handshake"`},
		{`"owner dev"*`, `"owner dev"*`},
		{"feature/owner-device", `"feature/owner-device"`},
		{`say "hi`, `"say" "hi"`},
		{`a"b`, `"a" "b"`},
		{`NEAR(a b) OR c`, `"NEAR(a" "b)" "OR" "c"`},
		{`it's "x""y"`, `"it's" "x" "y"`},
		{"  café  ", `"café"`},
		{`* "" - ;`, ``},
		{"", ``},
	}
	for _, c := range cases {
		got, err := FTSQuery(c.in)
		if c.want == "" {
			if err == nil {
				t.Errorf("FTSQuery(%q) = %q, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("FTSQuery(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	if _, err := FTSQuery(strings.Repeat("a ", 17)); err == nil {
		t.Error("17 terms accepted")
	}
}

func TestMarkSnippet(t *testing.T) {
	cases := []struct{ in, want string }{
		{"a \x02b\x03 c", "a <mark>b</mark> c"},
		{"<script>\x02x\x03</script>", "&lt;script&gt;<mark>x</mark>&lt;/script&gt;"},
		{"\x03stray\x02 open", "stray<mark> open</mark>"},
		{"\x02\x02a\x03\x03", "<mark>a</mark>"},
		{`"q" & 'a'`, "&#34;q&#34; &amp; &#39;a&#39;"},
	}
	for _, c := range cases {
		if got := markSnippet(c.in); got != c.want {
			t.Errorf("markSnippet(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// FuzzFTSQuery: any input gives an error or a query of quoted terms (each
// optionally a prefix) whose quotes balance, so nothing typed is FTS5
// syntax; and snippets never carry markup but the marks.
func FuzzFTSQuery(f *testing.F) {
	for _, s := range []string{"deploy", `"a b"*`, `x"y`, "feature/owner-device", `NEAR(a,3)`, "\x00\"*", "é*"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		q, err := FTSQuery(in)
		if err != nil {
			return
		}
		for rest := q; rest != ""; {
			if rest[0] != '"' {
				t.Fatalf("FTSQuery(%q) = %q: a term is not quoted", in, q)
			}
			i := 1
			for ; i < len(rest); i++ {
				if rest[i] == '"' {
					if i+1 < len(rest) && rest[i+1] == '"' {
						i++
						continue
					}
					break
				}
			}
			if i >= len(rest) {
				t.Fatalf("FTSQuery(%q) = %q: unbalanced quote", in, q)
			}
			rest = strings.TrimPrefix(strings.TrimPrefix(rest[i+1:], "*"), " ")
		}
		snip := markSnippet(in)
		if strings.Count(snip, "<mark>") != strings.Count(snip, "</mark>") || strings.Count(snip, "<")-strings.Count(snip, "<mark>")-strings.Count(snip, "</mark>") != 0 {
			t.Fatalf("markSnippet(%q) = %q", in, snip)
		}
	})
}
