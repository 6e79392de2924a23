// Command tpsim plans how to split a model across devices: it prices data, tensor, pipeline and
// hybrid parallelism with an analytical cost model. Run "tpsim --help" for the commands.
package main

import "os"

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }
