package cli

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/internal/suggest"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/strategies"
)

// Exit statuses (docs/cli.md, "Exit status").
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	// ExitInterrupted is the shell's status for a command ended by SIGINT (128 + 2).
	ExitInterrupted = 130
)

// ErrInterrupted is a command's error after Ctrl-C, once it has kept what finished: Finish prints
// the one line "tpsim CMD: interrupted" and returns ExitInterrupted.
var ErrInterrupted = errors.New("interrupted")

// UsageError is bad command-line input; Finish returns ExitUsage for it.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// Usagef returns a UsageError with the formatted message.
func Usagef(format string, a ...any) error { return &UsageError{fmt.Sprintf(format, a...)} }

// NewFlagSet returns a flag set for command name that reports errors instead of exiting or
// printing, with a --help flag that ParseFlags turns into pflag.ErrHelp.
func NewFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("tpsim "+name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	fs.Usage = func() {}
	fs.BoolP("help", "h", false, "show this help")
	return fs
}

// PrintHelp writes a command's help: its text and its flags.
func PrintHelp(w io.Writer, fs *pflag.FlagSet, help string) {
	fmt.Fprint(w, strings.TrimLeft(help, "\n"))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags:")
	fmt.Fprint(w, fs.FlagUsages())
}

// Finish turns the outcome of parsing or running a command into an exit status, writing help to
// stdout and errors to stderr.
func Finish(name string, fs *pflag.FlagSet, help string, err error, stdout, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	if errors.Is(err, pflag.ErrHelp) {
		PrintHelp(stdout, fs, help)
		return ExitOK
	}
	if errors.Is(err, ErrInterrupted) {
		fmt.Fprintf(stderr, "tpsim %s: interrupted\n", name)
		return ExitInterrupted
	}
	fmt.Fprintf(stderr, "tpsim %s: %s\n", name, WithSuggestion(err.Error()))
	var ue *UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Run 'tpsim %s --help' for usage.\n", name)
		return ExitUsage
	}
	return ExitFailure
}

// ParseFlags parses args with fs, mapping pflag's errors to usage errors; --help gives
// pflag.ErrHelp. maxArgs is the number of positional arguments allowed.
func ParseFlags(fs *pflag.FlagSet, args []string, maxArgs int) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return &UsageError{err.Error() + flagSuggestion(fs, err.Error())}
	}
	if h, _ := fs.GetBool("help"); h {
		return pflag.ErrHelp
	}
	if fs.NArg() > maxArgs {
		extra := fs.Args()[maxArgs:]
		return Usagef("unexpected argument %q", strings.Join(extra, " "))
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

// unknownName matches the errors of the model, hardware and strategies packages for a name that
// is not one of theirs: `unknown model "gpt-tiy"`. (compare's errors for an unknown strategy
// family carry their own "did you mean".)
var unknownName = regexp.MustCompile(`unknown (model|hardware|style) "([^"]*)"`)

// WithSuggestion adds "did you mean" to an error that names an unknown model, hardware or style:
// `unknown model "gpt-tiy" (did you mean "gpt-tiny"?); valid names: ...`.
func WithSuggestion(msg string) string {
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
	}
	return msg[:m[1]] + suggest.DidYouMean(name, candidates) + msg[m[1]:]
}
