package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/wheelhouse-dev/wheelhouse/bridge/claude"
)

// runHook is `wheelhouse hook claude`: Claude Code runs it on every tool
// call, so it does the least it can and always exits 0 (fail open).
func runHook(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = `Usage: wheelhouse hook claude                  Claude Code's hook entry point: reads the hook's JSON on stdin
       wheelhouse hook claude --install [--project DIR] [--command CMD]
                                              wire it into a project (shows the change first)
`
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if len(args) == 0 || args[0] != "claude" {
		return usageError{"name the harness: wheelhouse hook claude (see wheelhouse hook --help)"}
	}
	rest := args[1:]
	if len(rest) == 0 {
		if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return usageError{"this is Claude Code's hook entry point: Claude Code runs it with the hook's JSON on stdin. To wire it into a project: wheelhouse hook claude --install --project DIR"}
		}
		code := claude.RunHook(ctx, os.Stdin, stdout, os.Environ(), "")
		if code != 0 {
			os.Exit(code)
		}
		return nil
	}
	fs := newFlags("hook claude", "hook claude --install [--project DIR] [--command CMD]", stdout)
	install := fs.Bool("install", false, "wire this hook into <project>/.claude/settings.local.json (shows the change first; never touches settings.json)")
	project := fs.String("project", ".", "the project folder Claude Code runs in")
	command := fs.String("command", defaultHookCommand(), "the command Claude Code should run")
	if err := parse(fs, rest); err != nil {
		return err
	}
	if !*install {
		return usageError{"nothing to do: run without flags as the hook, or with --install to wire it"}
	}
	if self, _ := os.Executable(); strings.Contains(self, "go-build") {
		// go run builds into a temporary folder, or (Go 1.24 on) into the
		// build cache, which go clean -cache empties: the path would go stale.
		fmt.Fprintln(stderr, "warning: this wheelhouse binary lives in a `go run` build folder that goes away; install it (go install ./cmd/wheelhouse ./cmd/wheelhouse-hook) and run --install from there")
	}
	dir, err := filepath.Abs(*project)
	if err != nil {
		return err
	}
	return claude.Install(dir, *command, stdout)
}

// defaultHookCommand prefers the small wheelhouse-hook binary next to this
// one (about 3 ms per tool call instead of the full binary's start-up).
func defaultHookCommand() string {
	self, _ := os.Executable()
	fast := filepath.Join(filepath.Dir(self), "wheelhouse-hook")
	if fi, err := os.Stat(fast); err == nil && !fi.IsDir() {
		return shellQuote(fast) + " claude"
	}
	return shellQuote(self) + " hook claude"
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t'\"$`\\") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
