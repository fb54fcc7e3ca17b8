package openai

import (
	"bytes"
	"strings"
	"testing"
)

func applyText(t *testing.T, content, patch string) (string, error) {
	t.Helper()
	fps, err := parsePatch(patch)
	if err != nil {
		return "", err
	}
	if len(fps) != 1 {
		t.Fatalf("%d file patches, want 1", len(fps))
	}
	var in []byte
	if !fps[0].Create() {
		in = []byte(content)
	}
	out, err := applyFile(in, fps[0])
	return string(out), err
}

const sample = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"

func TestApplyPatch(t *testing.T) {
	cases := []struct {
		name, content, patch, want string
	}{
		{"Modify", sample, "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n two\n-three\n+THREE\n four\n", "one\ntwo\nTHREE\nfour\nfive\nsix\nseven\n"},
		{"GitHeadersAndTimestamps", sample, "diff --git a/f b/f\nindex 1..2 100644\n--- a/f\t2024-01-01\n+++ b/f\t2024-01-02\n@@ -1 +1 @@\n-one\n+ONE\n", "ONE\ntwo\nthree\nfour\nfive\nsix\nseven\n"},
		{"WrongLineNumberUniqueMatch", sample, "--- f\n+++ f\n@@ -1,2 +1,2 @@\n five\n-six\n+SIX\n", "one\ntwo\nthree\nfour\nfive\nSIX\nseven\n"},
		{"TwoHunks", sample, "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n one\n+one and a half\n two\n@@ -6,2 +7,2 @@\n six\n-seven\n+SEVEN\n", "one\none and a half\ntwo\nthree\nfour\nfive\nsix\nSEVEN\n"},
		{"Insert", sample, "--- a/f\n+++ b/f\n@@ -7,0 +8,1 @@\n+eight\n", sample + "eight\n"},
		{"InsertAtTop", sample, "--- a/f\n+++ b/f\n@@ -0,0 +1,1 @@\n+zero\n", "zero\n" + sample},
		{"EmptyContextLineWithoutSpace", "a\n\nb\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n\n-b\n+B\n", "a\n\nB\n"},
		{"Create", "", "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n", "hello\nworld\n"},
		{"CreateWithoutNewline", "", "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n\\ No newline at end of file\n", "hello"},
		{"Delete", "x\ny\n", "--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n", ""},
		{"AddNewlineAtEnd", "a\nb", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n", "a\nb\n"},
		{"RemoveNewlineAtEnd", "a\nb\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n", "a\nb"},
		{"UnmarkedPatchKeepsMissingNewline", "a\nb", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n", "a\nc"},
		{"CRLFFileKeepsCRLF", "a\r\nb\r\nc\r\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n", "a\r\nB\r\nc\r\n"},
		{"CRLFPatch", "a\nb\n", "--- a/f\r\n+++ b/f\r\n@@ -1,2 +1,2 @@\r\n a\r\n-b\r\n+B\r\n", "a\nB\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applyText(t, tc.content, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestApplyPatchRefuses(t *testing.T) {
	cases := []struct {
		name, content, patch, want string
	}{
		{"ErrContextMismatch", sample, "--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n two\n-tree\n+THREE\n four\n", "does not match the file"},
		{"ErrWhitespaceMatters", sample, "--- a/f\n+++ b/f\n@@ -2,1 +2,1 @@\n-two \n+2\n", "does not match the file"},
		{"ErrAmbiguous", "x\ny\nx\ny\nx\ny\n", "--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n x\n-y\n+Y\n", "more than once"},
		{"ErrOverlap", sample, "--- a/f\n+++ b/f\n@@ -2,2 +2,2 @@\n two\n-three\n+3\n@@ -3,1 +3,1 @@\n-three\n+3\n", "overlap"},
		{"ErrCountTooSmall", sample, "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n one\n-two\n+2\n", "more lines than its header"},
		{"ErrCountTooLarge", sample, "--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n one\n-two\n+2\n", "ends early"},
		{"ErrBadHunkLine", sample, "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n one\n*two\n", "starts with"},
		{"ErrBadHeader", sample, "--- a/f\n+++ b/f\n@@ -x +1 @@\n-one\n", "bad line number"},
		{"ErrRename", sample, "diff --git a/f b/g\nrename from f\nrename to g\n", "renames"},
		{"ErrRenameByNames", sample, "--- a/f\n+++ b/g\n@@ -1 +1 @@\n-one\n+ONE\n", "renames"},
		{"ErrBinary", sample, "Binary files a/x and b/x differ\n", "binary"},
		{"ErrNoChanges", sample, "just some text\n", "no file changes"},
		{"ErrHunkWithoutHeader", sample, "@@ -1 +1 @@\n-one\n+ONE\n", "without the file header"},
		{"ErrNoHunks", sample, "--- a/f\n+++ b/f\n", "has no hunks"},
		{"ErrDeleteLeavesLines", "x\ny\n", "--- a/f\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-x\n", "does not remove all"},
		{"ErrMarkerContradictsFile", "a\nb\n", "--- a/f\n+++ b/f\n@@ -2,1 +2,1 @@\n-b\n\\ No newline at end of file\n+c\n", "no newline"},
		{"ErrInsertPastEnd", "a\n", "--- a/f\n+++ b/f\n@@ -5,0 +6,1 @@\n+z\n", "inserts after line 5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := applyText(t, tc.content, tc.patch)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	t.Run("ErrSameFileTwice", func(t *testing.T) {
		_, err := parsePatch("--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n--- a/f\n+++ b/f\n@@ -2 +2 @@\n-c\n+d\n")
		if err == nil || !strings.Contains(err.Error(), "appears twice") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestParsePatchMultipleFiles(t *testing.T) {
	fps, err := parsePatch("Fix both.\n\n--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n--- /dev/null\n+++ b/dir/y.go\n@@ -0,0 +1 @@\n+new\n--- a/z\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(fps) != 3 || fps[0].Path() != "x.go" || !fps[1].Create() || fps[1].Path() != "dir/y.go" || !fps[2].Delete() || fps[2].Path() != "z" {
		t.Fatalf("%+v", fps)
	}
}

func TestUnifiedDiffRoundTrip(t *testing.T) {
	cases := []struct{ a, b string }{
		{sample, strings.Replace(sample, "four", "FOUR", 1)},
		{sample, "zero\n" + sample + "eight\n"},
		{sample, ""},
		{"", sample},
		{"a\nb", "a\nb\n"},
		{"a\nb\n", "a\nb"},
		{"a", "b"},
		{strings.Repeat("x\n", 50), strings.Repeat("x\n", 20) + "y\n" + strings.Repeat("x\n", 29)},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "1\n2\nB\n4\n5\n6\n7\n8\n9\n10\nK\n12\n"},
	}
	for _, tc := range cases {
		roundTrip(t, tc.a, tc.b, true)
	}
	if d := unifiedDiff("f", []byte(sample), []byte(sample), true); d != "" {
		t.Fatalf("diff of equal files: %q", d)
	}
	d := unifiedDiff("f", []byte(sample), []byte(strings.Replace(sample, "four", "FOUR", 1)), true)
	want := "--- a/f\n+++ b/f\n@@ -1,7 +1,7 @@\n one\n two\n three\n-four\n+FOUR\n five\n six\n seven\n"
	if d != want {
		t.Fatalf("diff\n%s\nwant\n%s", d, want)
	}
}

func roundTrip(t *testing.T, a, b string, exists bool) {
	t.Helper()
	d := unifiedDiff("f", []byte(a), []byte(b), exists)
	if !exists && b == "" {
		if d != "--- /dev/null\n+++ b/f\n" {
			t.Fatalf("diff for a new empty file: %q", d)
		}
		return
	}
	if d == "" {
		if a != b {
			t.Fatalf("no diff for %q → %q", a, b)
		}
		return
	}
	fps, err := parsePatch(d)
	if err != nil {
		t.Fatalf("parse our own diff of %q → %q: %v\n%s", a, b, err, d)
	}
	var in []byte
	if exists {
		in = []byte(a)
	}
	got, err := applyFile(in, fps[0])
	if err != nil {
		t.Fatalf("apply our own diff of %q → %q: %v\n%s", a, b, err, d)
	}
	if !bytes.Equal(got, []byte(b)) {
		t.Fatalf("round trip of %q → %q gave %q\n%s", a, b, got, d)
	}
}

// FuzzParsePatch: any text either parses or is refused, and a parsed patch
// applies or is refused, without panicking.
func FuzzParsePatch(f *testing.F) {
	f.Add("--- a/f\n+++ b/f\n@@ -2,3 +2,3 @@\n two\n-three\n+THREE\n four\n", sample)
	f.Add("--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n", "")
	f.Add("--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n", "x\ny\n")
	f.Add("--- a/f\n+++ b/f\n@@ -1 +1 @@\n\\\n-a\n", "a\r\nb")
	f.Add("--- \"a/q\\\"\"\n+++ b/f\n@@ -0,0 +0,0 @@\n", "")
	f.Fuzz(func(t *testing.T, patch, content string) {
		fps, err := parsePatch(patch)
		if err != nil {
			return
		}
		for _, fp := range fps {
			applyFile([]byte(content), fp)
		}
	})
}

// FuzzDiffRoundTrip: the diff we show for a write, applied to the old
// content, gives the new content.
func FuzzDiffRoundTrip(f *testing.F) {
	f.Add(sample, strings.Replace(sample, "two", "2", 1))
	f.Add("a\nb", "a\nb\n")
	f.Add("", "x")
	f.Add("x\n\ny\n", "x\ny\n\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		if strings.ContainsRune(a+b, '\r') || len(a)+len(b) > 4096 {
			t.Skip("CR line ends are normalized by design; long inputs are slow")
		}
		roundTrip(t, a, b, true)
		roundTrip(t, "", b, false)
	})
}
