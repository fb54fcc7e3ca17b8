package demo

import (
	"maps"
	"slices"
)

// workspace is the agent's virtual files, name → content. Nothing touches the
// disk. The Agent's mutex guards it.
type workspace map[string]string

// newWorkspace returns the files every demo agent starts with.
func newWorkspace() workspace {
	return workspace{
		"README.md": "# hello-wheelhouse\n\nA tiny project the Wheelhouse demo agent pretends to work on.\n",
		"main.go":   "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, wheelhouse\")\n}\n",
		"notes.txt": "TODO: fix the failing parser test.\nTODO: remove old.log once the build is green.\n",
		"old.log":   "build started\nbuild failed: flaky network\nbuild started\nbuild ok\n",
	}
}

// names returns the file names, sorted.
func (w workspace) names() []string {
	return slices.Sorted(maps.Keys(w))
}
