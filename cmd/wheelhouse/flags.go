package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
)

// newFlags returns a flag set whose flags also read WHEELHOUSE_<NAME>
// environment variables (flag > environment > default); call parse, which
// prints the usage to help on --help and turns a bad flag into one
// usageError.
func newFlags(name, usage string, help io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("wheelhouse "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse reports errors once, itself
	fs.Usage = func() { printUsage(help, fs, usage) }
	return fs
}

// printUsage lists the flags as --name, with the environment variable of
// one of them as an example.
func printUsage(w io.Writer, fs *flag.FlagSet, usage string) {
	fmt.Fprintf(w, "Usage: wheelhouse %s\n", usage)
	var example string
	fs.VisitAll(func(f *flag.Flag) {
		if example == "" {
			example = f.Name
		}
		arg, text := flag.UnquoteUsage(f)
		if arg != "" {
			arg = " " + arg
		}
		fmt.Fprintf(w, "\n  --%s%s\n      %s", f.Name, arg, text)
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
	})
	fmt.Fprintln(w)
	if example != "" {
		fmt.Fprintf(w, "\nEvery flag may also be set as WHEELHOUSE_<FLAG>, for example --%s as %s.\n", example, envName(example))
	}
}

func envName(flagName string) string {
	return "WHEELHOUSE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parse parses args, then fills unset flags from the environment. --help
// prints the usage and returns flag.ErrHelp (exit 0); anything else wrong
// is a usageError (exit 2).
func parse(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	if errors.Is(err, flag.ErrHelp) {
		usage()
		return err
	}
	if err != nil {
		return usageError{fmt.Sprintf("%v (see %s --help)", err, fs.Name())}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	fs.VisitAll(func(f *flag.Flag) {
		if set[f.Name] || err != nil {
			return
		}
		env := envName(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if e := f.Value.Set(v); e != nil {
				err = usageError{fmt.Sprintf("%s=%q: %v", env, v, e)}
			}
		}
	})
	return err
}

// enumValue is a string flag that takes one of a few values.
type enumValue struct {
	p       *string
	allowed []string
}

func (e enumValue) String() string {
	if e.p == nil {
		return ""
	}
	return *e.p
}

func (e enumValue) Set(s string) error {
	if !slices.Contains(e.allowed, s) {
		return fmt.Errorf("%q is not one of %s", s, strings.Join(e.allowed, ", "))
	}
	*e.p = s
	return nil
}

// enumVar defines a flag that refuses values other than allowed.
func enumVar(fs *flag.FlagSet, p *string, name, value string, allowed []string, usage string) {
	*p = value
	fs.Var(enumValue{p, allowed}, name, usage+" ("+strings.Join(allowed, ", ")+")")
}

var logLevels = []string{"debug", "info", "warn", "error"}

// newLogger logs text, or JSON lines when asked; level is one of logLevels.
func newLogger(w io.Writer, jsonLogs bool, level string) *slog.Logger {
	var lv slog.Level
	lv.UnmarshalText([]byte(level)) // checked by the flag
	opts := &slog.HandlerOptions{Level: lv}
	if jsonLogs {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
