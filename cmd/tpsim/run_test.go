package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
)

// runArgs calls run with buffers and returns what it printed and its exit status.
func runArgs(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return out.String(), errb.String(), code
}

// wantAll reports each string of want that text, a command's stdout or stderr (which), lacks.
func wantAll(t *testing.T, which, text string, want []string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(text, s) {
			t.Errorf("%s lacks %q:\n%s", which, s, text)
		}
	}
}

func TestRunDispatch(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		code       int
		stdoutHas  []string
		stderrHas  []string
		emptyOut   bool
		emptyError bool
	}{
		{"no command prints usage", nil, cli.ExitUsage, nil, []string{"Usage: tpsim <command>", "predict", "models", "hardware"}, true, false},
		{"--help", []string{"--help"}, cli.ExitOK, []string{"Commands:", "predict", "models", "hardware", "plan", "validate"}, nil, false, true},
		{"-h", []string{"-h"}, cli.ExitOK, []string{"Commands:"}, nil, false, true},
		{"help", []string{"help"}, cli.ExitOK, []string{"Commands:"}, nil, false, true},
		{"help predict", []string{"help", "predict"}, cli.ExitOK, []string{"Usage: tpsim predict", "--strategy"}, nil, false, true},
		{"unknown command lists valid ones", []string{"frobnicate"}, cli.ExitUsage, nil, []string{`unknown command "frobnicate"`, "predict, models, hardware"}, true, false},
		{"flag before command", []string{"--json"}, cli.ExitUsage, nil, []string{"needs a command"}, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := runArgs(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, c.code, errs)
			}
			wantAll(t, "stdout", out, c.stdoutHas)
			wantAll(t, "stderr", errs, c.stderrHas)
			if c.emptyOut && out != "" {
				t.Errorf("stdout not empty:\n%s", out)
			}
			if c.emptyError && errs != "" {
				t.Errorf("stderr not empty:\n%s", errs)
			}
		})
	}
}

// Every command answers --help (and -h) on stdout with exit status 0.
func TestHelpEveryCommand(t *testing.T) {
	for _, c := range commands {
		for _, flag := range []string{"--help", "-h"} {
			out, errs, code := runArgs(t, c.name, flag)
			if code != cli.ExitOK || errs != "" {
				t.Errorf("%s %s: exit %d, stderr %q", c.name, flag, code, errs)
			}
			if !strings.Contains(out, "Usage: tpsim "+c.name) || !strings.Contains(out, "Flags:") {
				t.Errorf("%s %s: help lacks usage or flags:\n%s", c.name, flag, out)
			}
		}
	}
}

// Flag errors are usage errors: exit 2, the error and a pointer to --help on stderr.
func TestFlagErrors(t *testing.T) {
	cases := [][]string{
		{"predict", "--bogus"},
		{"predict", "extra-argument"},
		{"predict", "--seq", "notanumber"},
		{"predict", "--model"},
		{"models", "--bogus"},
		{"models", "extra"},
		{"hardware", "a100-80g", "h200"},
		{"hardware", "--bogus"},
	}
	for _, args := range cases {
		out, errs, code := runArgs(t, args...)
		if code != cli.ExitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, cli.ExitUsage)
		}
		if out != "" {
			t.Errorf("%q: stdout not empty: %s", args, out)
		}
		if !strings.Contains(errs, "tpsim "+args[0]+": ") || !strings.Contains(errs, "--help") {
			t.Errorf("%q: stderr %q should name the command and point to --help", args, errs)
		}
	}
}
