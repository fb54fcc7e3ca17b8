package main

import (
	"context"
	"flag"
	"io"

	"github.com/wheelhouse-dev/wheelhouse/hub"
)

// backupFlagSet is the flags of backup and restore.
func backupFlagSet(name, usage string, help io.Writer) (*flag.FlagSet, *hub.BackupMain) {
	fs := newFlags(name, usage, help)
	m := &hub.BackupMain{Out: help}
	fs.StringVar(&m.DataDir, "data", defaultDataDir(), "the hub's data `directory`")
	fs.StringVar(&m.NATSURL, "nats-url", "", "a hub on a NATS cluster: the cluster's `URLs` (comma-separated)")
	fs.StringVar(&m.NATSSecrets, "nats-secrets", "", "with --nats-url: the hub-auth.json `file` (its ops user)")
	return fs, m
}

func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, m := backupFlagSet("backup", "backup [--data DIR] BACKUP-DIR", stdout)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"backup takes one argument: the new directory to write the backup into"}
	}
	m.Dir = fs.Arg(0)
	return m.Backup(ctx)
}

func runRestore(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, m := backupFlagSet("restore", "restore [--data DIR] BACKUP-DIR", stdout)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"restore takes one argument: the backup directory"}
	}
	m.Dir = fs.Arg(0)
	return m.Restore(ctx)
}
