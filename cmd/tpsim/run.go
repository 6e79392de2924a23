package main

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/internal/suggest"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// Exit statuses (DESIGN.md, "Command line").
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	// exitInterrupted is the shell's status for a command ended by SIGINT (128 + 2).
	exitInterrupted = 130
)

// errInterrupted is a command's error after Ctrl-C, once it has kept what finished: finish prints
// the one line "tpsim CMD: interrupted" and exits with exitInterrupted.
var errInterrupted = errors.New("interrupted")

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
		{"study", "run a planning study: plan over models, hardware, what-ifs and GPU counts; HTML/Markdown/CSV report", runStudy},
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
		return exitUsage
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
		return exitOK
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(args[1:], stdout, stderr)
		}
	}
	if strings.HasPrefix(name, "-") {
		fmt.Fprintf(stderr, "tpsim: flag %s needs a command first; commands: %s (run 'tpsim --help')\n", name, strings.Join(commandNames(), ", "))
		return exitUsage
	}
	fmt.Fprintf(stderr, "tpsim: unknown command %q%s; valid commands: %s (run 'tpsim --help')\n", name, suggest.DidYouMean(name, commandNames()), strings.Join(commandNames(), ", "))
	return exitUsage
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

// usageError is bad command-line input; it exits with status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// newFlagSet returns a flag set for command name that reports errors instead of exiting or
// printing, with a --help flag that parseFlags turns into pflag.ErrHelp.
func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("tpsim "+name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.Usage = func() {}
	fs.BoolP("help", "h", false, "show this help")
	return fs
}

// printHelp writes a command's help: its text and its flags.
func printHelp(w io.Writer, fs *pflag.FlagSet, help string) {
	fmt.Fprint(w, strings.TrimLeft(help, "\n"))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags:")
	fmt.Fprint(w, fs.FlagUsages())
}

// finish turns the outcome of parsing or running a command into an exit status, writing help to
// stdout and errors to stderr.
func finish(name string, fs *pflag.FlagSet, help string, err error, stdout, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, pflag.ErrHelp) {
		printHelp(stdout, fs, help)
		return exitOK
	}
	if errors.Is(err, errInterrupted) {
		fmt.Fprintf(stderr, "tpsim %s: interrupted\n", name)
		return exitInterrupted
	}
	fmt.Fprintf(stderr, "tpsim %s: %s\n", name, withSuggestion(err.Error()))
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Run 'tpsim %s --help' for usage.\n", name)
		return exitUsage
	}
	return exitFailure
}

// parseFlags parses args with fs, mapping pflag's errors to usage errors; --help gives
// pflag.ErrHelp. maxArgs is the number of positional arguments allowed.
func parseFlags(fs *pflag.FlagSet, args []string, maxArgs int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return &usageError{err.Error() + flagSuggestion(fs, err.Error())}
	}
	if h, _ := fs.GetBool("help"); h {
		return pflag.ErrHelp
	}
	if fs.NArg() > maxArgs {
		extra := fs.Args()[maxArgs:]
		return usagef("unexpected argument %q", strings.Join(extra, " "))
	}
	return nil
}

// flagSuggestion is ` (did you mean --model?)` for pflag's "unknown flag: --modle", else "".
func flagSuggestion(fs *pflag.FlagSet, msg string) string {
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return ""
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if c, ok := suggest.Nearest(name, names); ok {
		return fmt.Sprintf(" (did you mean --%s?)", c)
	}
	return ""
}

// unknownName matches the errors of the model, hardware and strategies packages and of compare
// for a name that is not one of theirs: `unknown model "gpt-tiy"`.
var unknownName = regexp.MustCompile(`unknown (model|hardware|style|strategy) "([^"]*)"`)

// withSuggestion adds "did you mean" to an error that names an unknown model, hardware, style
// or compare strategy: `unknown model "gpt-tiy" (did you mean "gpt-tiny"?); valid names: ...`.
func withSuggestion(msg string) string {
	m := unknownName.FindStringSubmatchIndex(msg)
	if m == nil || strings.Contains(msg, "did you mean") {
		return msg
	}
	kind, name := msg[m[2]:m[3]], msg[m[4]:m[5]]
	var candidates []string
	switch kind {
	case "model":
		candidates = model.PresetNames()
	case "hardware":
		candidates = append(hardware.Names(), hardware.HostName)
	case "style":
		for _, s := range strategies.Styles {
			candidates = append(candidates, string(s))
		}
	case "strategy":
		candidates = strategyNames
	}
	return msg[:m[1]] + suggest.DidYouMean(name, candidates) + msg[m[1]:]
}
