package main

import (
	"context"
	"fmt"
	"io"
)

// notYet answers for commands this build does not have yet, plainly.
func notYet(name string) func(context.Context, []string, io.Writer, io.Writer) error {
	return func(context.Context, []string, io.Writer, io.Writer) error {
		return fmt.Errorf("%q is not available in this build of wheelhouse yet", name)
	}
}

var (
	runHook   = notYet("hook")
	runDoctor = notYet("doctor")
)
