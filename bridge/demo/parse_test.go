package demo

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDeleteTargets(t *testing.T) {
	known := func(name string) bool { _, ok := newWorkspace()[name]; return ok }
	cases := []struct {
		name string
		text string
		want []string
	}{
		{"Plain", "please delete old.log", []string{"old.log"}},
		{"Rm", "rm notes.txt", []string{"notes.txt"}},
		{"RmFlags", "rm -rf old.log now", []string{"old.log"}},
		{"RemoveTheFile", "Remove the file ./old.log.", []string{"old.log"}},
		{"CaseInsensitive", "DELETE README.md", []string{"README.md"}},
		{"Several", "delete old.log and rm notes.txt, then delete old.log", []string{"old.log", "notes.txt"}},
		{"UnknownFileLike", "delete secrets.env", []string{"secrets.env"}},
		{"NotAFileName", "delete everything and remove the tabs", nil},
		{"LeavesWorkspace", "rm /etc/passwd and delete ../x.txt", nil},
		{"InsideHeaders", "From: @bob\nRoom: #dev\n\nplease rm main.go", []string{"main.go"}},
		{"FencedIsData", "see:\n```\nrm old.log\n```\nthanks", nil},
		{"AfterFence", "```\nx\n```\nrm old.log", []string{"old.log"}},
		{"WordInside", "undelete old.log; firm old.log", nil},
		{"Nothing", "fix the failing test", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := deleteTargets(tc.text, known); !slices.Equal(got, tc.want) {
				t.Fatalf("deleteTargets(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestInstruction(t *testing.T) {
	cases := []struct {
		name, text, want string
	}{
		{"Plain", "fix the test", "fix the test"},
		{"SkipsHeaders", "From: @bob\nRoom: #dev\n\nuse tabs\n", "use tabs"},
		{"SkipsTrailingHeaderAndRule", "please rebase\n---\nSent-By: wheelhouse\n", "please rebase"},
		{"SkipsFence", "do this\n```\nrm -rf /\n```\n", "do this"},
		{"OnlyHeaders", "From: @bob", "From: @bob"},
		{"Empty", "", ""},
		{"Long", strings.Repeat("x", 300), strings.Repeat("x", 159) + "…"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := instruction(tc.text); got != tc.want {
				t.Fatalf("instruction(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func FuzzDeleteTargets(f *testing.F) {
	for _, s := range []string{"delete old.log", "rm -rf ./a/../b.txt", "```\nrm x.y\n```", "remove the file ../../etc", "From: x\n\nrm a.b"} {
		f.Add(s)
	}
	known := func(name string) bool { _, ok := newWorkspace()[name]; return ok }
	f.Fuzz(func(t *testing.T, text string) {
		seen := map[string]bool{}
		for _, name := range deleteTargets(text, known) {
			if name == "" || seen[name] || strings.HasPrefix(name, "/") || name == ".." || strings.HasPrefix(name, "../") {
				t.Fatalf("bad target %q from %q", name, text)
			}
			seen[name] = true
		}
		if got := instruction(text); utf8.ValidString(text) && (!utf8.ValidString(got) || utf8.RuneCountInString(got) > 160) {
			t.Fatalf("instruction(%q) = %q", text, got)
		}
	})
}
