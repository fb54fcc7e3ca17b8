package chat

import (
	"reflect"
	"strings"
	"testing"
)

func user(name string, start, end int) Mention {
	return Mention{Kind: MentionUser, User: name, Start: start, End: end}
}

func agent(owner, name string, start, end int) Mention {
	return Mention{Kind: MentionAgent, Owner: owner, Agent: name, Start: start, End: end}
}

func TestParseMentions(t *testing.T) {
	long := strings.Repeat("a", 32)
	cases := []struct {
		name string
		text string
		want []Mention
	}{
		{"User", "hi @alice", []Mention{user("alice", 3, 9)}},
		{"CombiningMarkAfterAgent", "@alice/demo\u0301 run", nil},
		{"CombiningMarkAfterUser", "hi @bob\u0308 there", nil},
		{"CombiningMarkAfterOwner", "@alice\u0301/demo run", nil},
		{"CJKRightAfterIsStillAMention", "@alice/demo请看", []Mention{agent("alice", "demo", 0, 11)}},
		{"Agent", "@bob/codex run tests", []Mention{agent("bob", "codex", 0, 10)}},
		{"UpperCaseLowered", "@Bob/CoDeX and @ALICE", []Mention{agent("bob", "codex", 0, 10), user("alice", 15, 21)}},
		{"NameCharacters", "@a1_b.c-d/x.y_z-9", []Mention{agent("a1_b.c-d", "x.y_z-9", 0, 17)}},
		{"TrailingPunctuationTrimmed", "thanks @bob. and @carol- ok @dave/codex.", []Mention{user("bob", 7, 11), user("carol", 17, 23), agent("dave", "codex", 28, 39)}},
		{"Parenthesized", "(@bob/codex), [@alice]", []Mention{agent("bob", "codex", 1, 11), user("alice", 15, 21)}},
		{"AfterColonAndNewline", "cc:@bob\n@carol", []Mention{user("bob", 3, 7), user("carol", 8, 14)}},
		{"AgentsDeduped", "@bob/codex do x. @BOB/codex do y. @bob/claude", []Mention{agent("bob", "codex", 0, 10), agent("bob", "claude", 34, 45)}},
		{"UsersKept", "@alice @alice", []Mention{user("alice", 0, 6), user("alice", 7, 13)}},
		{"AgentAndOwnerBoth", "@bob @bob/codex", []Mention{user("bob", 0, 4), agent("bob", "codex", 5, 15)}},
		{"MaxLength", "@" + long, []Mention{user(long, 0, 33)}},
		{"EmailIgnored", "mail a@b.c or bob@example.com", nil},
		{"EmailAfterMentionIgnored", "@bob@example.com", nil},
		{"PathIgnored", "see https://x.io/@bob and a/@bob", nil},
		{"DoubleAt", "@@bob", nil},
		{"EscapedAt", `\@bob`, nil},
		{"TooLong", "@" + long + "a", nil},
		{"BadFirstChar", "@_bob @.bob @-bob", nil},
		{"Bare", "@ and @/ and @", nil},
		{"AgentTrailingSlashIgnored", "@bob/ hi", nil},
		{"AgentPathIgnored", "@bob/codex/x", nil},
		{"AgentThenEmail", "@bob/codex@host", nil},
		{"TrimmedThenSlashIgnored", "@bob./codex", nil},
		{"UnicodeLetterBefore", "é@bob", nil},
		{"UnicodeAfterIsBoundary", "@bob… ok", []Mention{user("bob", 0, 4)}},
		{"InlineCodeIgnored", "run `@bob/codex stop` then @alice", []Mention{user("alice", 27, 33)}},
		{"DoubleBacktickCode", "``a ` @bob`` @carol", []Mention{user("carol", 13, 19)}},
		{"UnmatchedBacktickIsText", "it`s @bob", []Mention{user("bob", 5, 9)}},
		{"FencedBlockIgnored", "```\n@bob/codex rm -rf /\n```\n@alice", []Mention{user("alice", 28, 34)}},
		{"UnclosedFenceIgnoredToEnd", "@carol\n```sh\n@bob/codex x\n@alice", []Mention{user("carol", 0, 6)}},
		{"QuoteIgnored", "> @bob/codex delete it\n@alice look", []Mention{user("alice", 23, 29)}},
		{"ForwardedIgnored", "@alice fyi\n---------- Forwarded message ----------\n@bob/codex push", []Mention{user("alice", 0, 6)}},
		{"ForwardedFromIgnored", "@alice\nForwarded from carol: @bob/codex push", []Mention{user("alice", 0, 6)}},
		{"Empty", "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ParseMentions(c.text)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("ParseMentions(%q)\n got %+v\nwant %+v", c.text, got, c.want)
			}
			for _, m := range got {
				if !strings.EqualFold(c.text[m.Start:m.End], "@"+m.User) && !strings.EqualFold(c.text[m.Start:m.End], "@"+m.Owner+"/"+m.Agent) {
					t.Fatalf("offsets %d..%d = %q do not cover %+v", m.Start, m.End, c.text[m.Start:m.End], m)
				}
			}
		})
	}
}

func TestIsStopCommand(t *testing.T) {
	cases := []struct {
		text string
		want bool
	}{
		{"@bob/codex stop", true},
		{"  @Bob/Codex STOP!  ", true},
		{"@bob/codex stop.", true},
		{"@bob/codex   stop!!", true},
		{"@bob/codex: stop", true},
		{"@bob/codex, stop", true},
		{"@bob/codex:stop", true},
		{"@bob/codex\tstop\n", true},
		{"@bob/codex stop now", false},
		{"@bob/codex please stop", false},
		{"@bob/codexstop", false},
		{"@bob/codexx stop", false},
		{"@bob/claude stop", false},
		{"@alice/codex stop", false},
		{"bob/codex stop", false},
		{"stop @bob/codex", false},
		{"@bob/codex ſtop", false},
		{"@bob/codex :: stop", false},
		{"@bob/codex", false},
		{"", false},
		{"@bob/codex stop?", false},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			if got := IsStopCommand(c.text, "bob", "codex"); got != c.want {
				t.Fatalf("IsStopCommand(%q) = %v, want %v", c.text, got, c.want)
			}
		})
	}
	t.Run("EmptyHandle", func(t *testing.T) {
		if IsStopCommand("@/ stop", "", "") {
			t.Fatal("empty owner/agent matched")
		}
	})
}

// FuzzParseMentions: no panics, offsets in range and ordered, each mention
// covers its own text, names are valid and lower-case, agents unique.
func FuzzParseMentions(f *testing.F) {
	for _, s := range []string{"@bob/codex hi @alice", "a@b.c", "`@x` ```\n@y\n```", "> @q\n@r.", "@" + strings.Repeat("a", 40), "\xff@bob"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		seen := map[string]bool{}
		prevEnd := 0
		for _, m := range ParseMentions(text) {
			if m.Start < prevEnd || m.End <= m.Start || m.End > len(text) || text[m.Start] != '@' {
				t.Fatalf("bad offsets %+v (prev end %d, len %d)", m, prevEnd, len(text))
			}
			prevEnd = m.End
			switch m.Kind {
			case MentionUser:
				checkName(t, m.User)
				if !strings.EqualFold(text[m.Start:m.End], "@"+m.User) {
					t.Fatalf("%+v does not cover %q", m, text[m.Start:m.End])
				}
			case MentionAgent:
				checkName(t, m.Owner)
				checkName(t, m.Agent)
				if !strings.EqualFold(text[m.Start:m.End], "@"+m.Owner+"/"+m.Agent) {
					t.Fatalf("%+v does not cover %q", m, text[m.Start:m.End])
				}
				if seen[m.Owner+"/"+m.Agent] {
					t.Fatalf("agent %s/%s twice", m.Owner, m.Agent)
				}
				seen[m.Owner+"/"+m.Agent] = true
			default:
				t.Fatalf("kind %q", m.Kind)
			}
		}
	})
}

func checkName(t *testing.T, n string) {
	t.Helper()
	if n == "" || len(n) > maxName || !isAlnum(n[0]) || strings.ToLower(n) != n || strings.TrimRight(n, ".-") != n {
		t.Fatalf("bad name %q", n)
	}
	for i := 0; i < len(n); i++ {
		if !isNameByte(rune(n[i])) {
			t.Fatalf("bad name %q", n)
		}
	}
}

// FuzzIsStopCommand: IsStopCommand never panics nor reads a stop into
// text without one (QuotedParts is fuzzed in authz, where it lives).
func FuzzIsStopCommand(f *testing.F) {
	for _, s := range []string{"@bob/codex stop", "@bob/codex   stop!!", "stop", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if IsStopCommand(text, "bob", "codex") && !strings.Contains(strings.ToLower(text), "stop") {
			t.Fatalf("%q counted as a stop command", text)
		}
	})
}
