package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// newFlags returns a flag set whose flags also read WHEELHOUSE_<NAME>
// environment variables (flag > environment > default); call parse.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("wheelhouse "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: wheelhouse %s\n\n", usage)
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nEvery flag may also be set as WHEELHOUSE_<FLAG> (for example --http as WHEELHOUSE_HTTP).\n")
	}
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	set := map[string]bool{}
	if err := fs.Parse(args); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		env := "WHEELHOUSE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok {
			if e := f.Value.Set(v); e != nil {
				err = usageError{fmt.Sprintf("%s=%q: %v", env, v, e)}
			}
		}
	})
	return err
}

// newLogger logs text on a terminal and JSON when asked (or when not a terminal and json is set).
func newLogger(w io.Writer, jsonLogs bool, level string) *slog.Logger {
	var lv slog.Level
	lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if jsonLogs {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
