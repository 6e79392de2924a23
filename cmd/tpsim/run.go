package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/internal/suggest"
)

// command is one subcommand: it parses args itself and returns an exit status.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands lists the subcommands in the order help prints them (set in init: completion reads
// it, and a variable cannot refer to itself through its initializer).
var commands []command

func init() { commands = commandList() }

func commandList() []command {
	return []command{
		{"predict", "price one strategy for a model on hardware: memory, communication, time, MFU", runPredict},
		{"models", "list the preset models with their parameter counts", runModels},
		{"hardware", "list the hardware presets, or show one", runHardware},
		{"exec", "really train sharded on local goroutine ranks and check against one device", runExec},
		{"sim", "lay one step out on a timeline with the discrete-event simulator; critical path, trace", runSim},
		{"plot", "redraw the figures of a compare from its results.json", runPlot},
		{"compare", "predict and measure strategies side by side on this machine; figures, report, recommendation", runCompare},
		{"calibrate", "measure this machine's kernels and collectives and fit the host hardware profile", runCalibrate},
		{"plan", "search every strategy for a model on N devices, rank them and explain the winner", runPlan},
		{"export", "write a strategy as a PyTorch script, torchtitan TOML, Megatron-LM flags, DeepSpeed JSON or HF tp plan", runExport},
		{"study", "run a planning study: plan over models, hardware, what-ifs and GPU counts; HTML/Markdown/CSV report", runStudy},
		{"goodput", "goodput of a training at scale: failures, restarts, checkpoints and stragglers (closed form and simulation)", runGoodput},
		{"validate", "check the cost model against published training runs (predicted vs published, APE per row)", runValidate},
		{"fit", "fit the presets' declared achieved fractions on the published training runs (in-sample and leave-one-source-out MAPE)", runFit},
		{"version", "print the module path, version and VCS revision tpsim was built from", runVersion},
		{"completion", "print a shell completion script: tpsim completion bash|zsh|fish", runCompletion},
	}
}

func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

// run is the whole program: main only hands it the arguments and exits with its status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return cli.ExitUsage
	}
	name := args[0]
	switch name {
	case "-v", "--version":
		return runVersion(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		if name == "help" && len(args) > 1 {
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return cli.ExitOK
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(args[1:], stdout, stderr)
		}
	}
	if strings.HasPrefix(name, "-") {
		fmt.Fprintf(stderr, "tpsim: flag %s needs a command first; commands: %s (run 'tpsim --help')\n", name, strings.Join(commandNames(), ", "))
		return cli.ExitUsage
	}
	fmt.Fprintf(stderr, "tpsim: unknown command %q%s; valid commands: %s (run 'tpsim --help')\n", name, suggest.DidYouMean(name, commandNames()), strings.Join(commandNames(), ", "))
	return cli.ExitUsage
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "tpsim answers: how should this model be split across these devices?")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: tpsim <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'tpsim <command> --help' for a command's flags.")
}

// options are a command's parsed flags; run does the command.
type options interface {
	run(stdout, stderr io.Writer) error
}

// subcommand is the run function of a command whose flags parse reads: it runs the command when
// they are good, and the outcome becomes the exit status (cli.Finish).
func subcommand[O options](name, help string, parse func([]string) (O, *pflag.FlagSet, error)) func([]string, io.Writer, io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		o, fs, err := parse(args)
		if err == nil {
			err = o.run(stdout, stderr)
		}
		return cli.Finish(name, fs, help, err, stdout, stderr)
	}
}
