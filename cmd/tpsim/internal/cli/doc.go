// Package cli is what tpsim's commands share: their flag sets and how an outcome becomes an exit
// status (help on stdout, errors on stderr with "did you mean", status 0 ok, 1 failure, 2 usage,
// 130 interrupted: docs/cli.md, "Exit status"), and the flags that several commands repeat:
// --model and --hardware (Target, which reads "host" only through the hardware.Loader it is
// given), the strategy flags of predict and sim (Pricing), --optimizer and --attn of exec and
// compare. It sits under cmd/tpsim: only the commands use it, and it imports nothing above
// strategies.
//
// Usage errors (Usagef) are bad command-line input and exit with status 2; every other error is a
// failure (status 1). Nothing here prints except Finish and PrintHelp.
package cli
