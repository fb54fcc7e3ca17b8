// Package execagent is the "exec" harness: it runs any command that takes a
// prompt and exits (a CLI in non-interactive mode), one process per turn. It
// cannot steer a running turn, so the bridge queues follow-ups instead. It
// imports only bridge (and wheelhouse for errors); never hub, web or another
// harness. (The directory is not named exec so the package does not shadow
// os/exec.)
package execagent
