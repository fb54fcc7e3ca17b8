package authz

import (
	"reflect"
	"testing"
)

func TestQuotedParts(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []string // "kind:text" of each part
	}{
		{"None", "just text with `inline code`", nil},
		{"FencedBlock", "look:\n```go\nfmt.Println()\n```\nok", []string{"code:```go\nfmt.Println()\n```"}},
		{"FencedBlockCRLF", "a\r\n```\r\nx\r\n```\r\nb", []string{"code:```\r\nx\r\n```"}},
		{"IndentedFence", "   ```\nx\n   ```", []string{"code:   ```\nx\n   ```"}},
		{"FourSpacesNotFence", "    ```\nx", nil},
		{"LongerFenceClosesOnlyWithLonger", "````\n```\nx\n````\ny", []string{"code:````\n```\nx\n````"}},
		{"InfoWithBacktickNotFence", "```a`b\nx", nil},
		{"UnclosedFenceRunsToEnd", "a\n```\nx\ny\n", []string{"code:```\nx\ny"}},
		{"FenceAtEnd", "```", []string{"code:```"}},
		{"QuoteRun", "he said\n> one\n>two\n  > three\nend", []string{"quote:> one\n>two\n  > three"}},
		{"TwoQuotes", "> a\nb\n> c", []string{"quote:> a", "quote:> c"}},
		{"QuoteInsideFenceIsCode", "```\n> x\n```", []string{"code:```\n> x\n```"}},
		{"Forwarded", "fyi\n---------- Forwarded message ----------\nFrom: x\nhello\n", []string{"forwarded:---------- Forwarded message ----------\nFrom: x\nhello"}},
		{"ForwardedFrom", "fyi\nForwarded from @carol\nhello", []string{"forwarded:Forwarded from @carol\nhello"}},
		{"ForwardedFromCaseInsensitive", "FORWARDED FROM x", []string{"forwarded:FORWARDED FROM x"}},
		{"ForwardedInsideFenceIsCode", "```\nForwarded from x\n```\ny", []string{"code:```\nForwarded from x\n```"}},
		{"Mixed", "```\nc\n```\n> q\nForwarded from z\n> not a quote now", []string{"code:```\nc\n```", "quote:> q", "forwarded:Forwarded from z\n> not a quote now"}},
		{"ForwardedWordInSentence", "I forwarded from home", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, p := range QuotedParts(c.text) {
				got = append(got, p.Kind+":"+c.text[p.Start:p.End])
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("QuotedParts(%q)\n got %q\nwant %q", c.text, got, c.want)
			}
		})
	}
}

// FuzzQuotedParts: no panics, parts in range, ordered, not overlapping, of
// a known kind.
func FuzzQuotedParts(f *testing.F) {
	for _, s := range []string{"```\nx\n```", "> a\n> b", "---------- Forwarded message ----------\nx", "Forwarded from y", "a\r\n```\r\n", "````\n```", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		prevEnd := 0
		for _, p := range QuotedParts(text) {
			if p.Start < prevEnd || p.End < p.Start || p.End > len(text) {
				t.Fatalf("bad part %+v (prev end %d, len %d)", p, prevEnd, len(text))
			}
			if p.Kind != PartCode && p.Kind != PartQuote && p.Kind != PartForwarded {
				t.Fatalf("kind %q", p.Kind)
			}
			prevEnd = p.End
		}
	})
}
