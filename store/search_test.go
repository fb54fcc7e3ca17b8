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
		{"a\x00b", `"a" "b"`},
		{"\x00\x01\x7f", ``},
		{"x\u0085y\tz", `"x" "y" "z"`},
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
	o, c := snippetMarks()
	if o2, _ := snippetMarks(); o2 == o {
		t.Fatal("two searches share their marks")
	}
	cases := []struct{ in, want string }{
		{"a " + o + "b" + c + " c", "a <mark>b</mark> c"},
		{"<script>" + o + "x" + c + "</script>", "&lt;script&gt;<mark>x</mark>&lt;/script&gt;"},
		{c + "stray" + o + " open", "stray<mark> open</mark>"},
		{o + o + "a" + c + c, "<mark>a</mark>"},
		{`"q" & 'a'`, "&#34;q&#34; &amp; &#39;a&#39;"},
		// A message's own mark characters add nothing.
		{"\x02<b>injected</b>\x03 " + o + "word" + c, "&lt;b&gt;injected&lt;/b&gt; <mark>word</mark>"},
	}
	for _, tc := range cases {
		if got := markSnippet(tc.in, o, c); got != tc.want {
			t.Errorf("markSnippet(%q) = %q, want %q", tc.in, got, tc.want)
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
		snip := markSnippet(in, "\x02n[", "\x02n]")
		if strings.Count(snip, "<mark>") != strings.Count(snip, "</mark>") || strings.Count(snip, "<")-strings.Count(snip, "<mark>")-strings.Count(snip, "</mark>") != 0 {
			t.Fatalf("markSnippet(%q) = %q", in, snip)
		}
	})
}
