package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/strategies"
)

// Finish maps each outcome to its exit status and stream (docs/cli.md, "Exit status").
func TestFinish(t *testing.T) {
	fs := NewFlagSet("demo")
	fs.Int("gpus", 8, "number of devices")
	for _, c := range []struct {
		name           string
		err            error
		code           int
		stdout, stderr string
	}{
		{"ok", nil, ExitOK, "", ""},
		{"help", pflag.ErrHelp, ExitOK, "Usage: demo\n\nFlags:\n  -h, --help[=true|false]   show this help\n      --gpus int            number of devices (default 8)\n", ""},
		{"interrupted", fmt.Errorf("wrapped: %w", ErrInterrupted), ExitInterrupted, "", "tpsim demo: interrupted\n"},
		{"usage", Usagef("--gpus=%d must be at least 1", 0), ExitUsage, "", "tpsim demo: --gpus=0 must be at least 1\nRun 'tpsim demo --help' for usage.\n"},
		{"failure", errors.New("disk full"), ExitFailure, "", "tpsim demo: disk full\n"},
	} {
		var out, errb bytes.Buffer
		if code := Finish("demo", fs, "Usage: demo\n", c.err, &out, &errb); code != c.code || out.String() != c.stdout || errb.String() != c.stderr {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d, %q, %q", c.name, code, out.String(), errb.String(), c.code, c.stdout, c.stderr)
		}
	}
}

func TestParseFlags(t *testing.T) {
	fs := NewFlagSet("demo")
	fs.String("model", "", "model")
	var ue *UsageError
	if err := ParseFlags(fs, []string{"--modle", "x"}, 0); !errors.As(err, &ue) || err.Error() != "unknown flag: --modle (did you mean --model?)" {
		t.Errorf("misspelt flag: %v", err)
	}
	fs = NewFlagSet("demo")
	if err := ParseFlags(fs, []string{"a", "b"}, 1); !errors.As(err, &ue) || err.Error() != `unexpected argument "b"` {
		t.Errorf("two arguments, one allowed: %v", err)
	}
	fs = NewFlagSet("demo")
	if err := ParseFlags(fs, []string{"-h"}, 0); !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("-h: %v, want pflag.ErrHelp", err)
	}
}

func TestWithSuggestion(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`model: unknown model "gpt-tiy"; valid names: ...`, `model: unknown model "gpt-tiy" (did you mean "gpt-tiny"?); valid names: ...`},
		{`unknown hardware "a100"`, `unknown hardware "a100" (did you mean "a100-80g"?)`},
		{`unknown style "rowwize"`, `unknown style "rowwize" (did you mean "rowwise"?)`},
		{`unknown model "zzzzzzzzzzzz"`, `unknown model "zzzzzzzzzzzz"`},
		{`unknown model "x" (did you mean "y"?)`, `unknown model "x" (did you mean "y"?)`},
		{"disk full", "disk full"},
	} {
		if got := WithSuggestion(c.in); got != c.want {
			t.Errorf("WithSuggestion(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// --seq, --precision and --plan override what the --strategy string says.
func TestPricingOverrides(t *testing.T) {
	o := &Pricing{Strategy: "dp=2,tp=2,seq=512,precision=mixed", Seq: 1024, Precision: string(strategies.PrecisionFP32), Plan: "colwise"}
	st, err := o.StrategyOf()
	if err != nil {
		t.Fatal(err)
	}
	if st.Seq != 1024 || st.Precision != strategies.PrecisionFP32 || st.Plan == nil || st.Plan.Whole != strategies.Colwise {
		t.Errorf("flags did not override the strategy: %+v", st)
	}
	o = &Pricing{Strategy: "dp=2,seq=512"}
	if st, err = o.StrategyOf(); err != nil || st.Seq != 512 {
		t.Errorf("no flags: seq %d, err %v; want the strategy's 512", st.Seq, err)
	}
}

func TestPricingCheck(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" ok
	}{
		{nil, ""},
		{[]string{"--seq", "0"}, "--seq=0 must be a positive number of tokens"},
		{[]string{"--precision", " FP32 "}, ""},
		// fp8 is a valid precision= strategy key, so the flag takes it too (issue 33).
		{[]string{"--precision", "fp8"}, ""},
		{[]string{"--precision", "fp16"}, `--precision="fp16" is not valid; use one of mixed, fp32, fp8`},
	} {
		o := &Pricing{}
		fs := NewFlagSet("demo")
		o.Register(fs)
		if err := ParseFlags(fs, c.args, 0); err != nil {
			t.Fatal(err)
		}
		err := o.Check(fs)
		var ue *UsageError
		if c.want == "" && err != nil || c.want != "" && (!errors.As(err, &ue) || err.Error() != c.want) {
			t.Errorf("%q: err %v, want %q", c.args, err, c.want)
		}
	}
}

// Load reads the target's model and hardware, "host" only through the loader it is given.
func TestTargetLoad(t *testing.T) {
	tg := Target{Model: "gpt-tiny", Hardware: DefaultHardware}
	m, hw, err := tg.Load(hardware.Loader{})
	if err != nil || m.Name != "gpt-tiny" || hw.Name != DefaultHardware {
		t.Fatalf("Load = %v, %v, %v", m, hw, err)
	}
	tg.Model = "gpt-tiy"
	if _, _, err := tg.Load(hardware.Loader{}); err == nil || !strings.Contains(err.Error(), `"gpt-tiy"`) {
		t.Errorf("unknown model: err %v", err)
	}
	tg = Target{Model: "gpt-tiny", Hardware: hardware.HostName}
	if _, _, err := tg.Load(hardware.Loader{}); err == nil || !strings.Contains(err.Error(), `unknown hardware "host"`) {
		t.Errorf("host without a loader: err %v", err)
	}
	want, err := hardware.Preset("h100-sxm")
	if err != nil {
		t.Fatal(err)
	}
	if _, hw, err := tg.Load(hardware.Loader{Host: func() (*hardware.Hardware, error) { return want, nil }}); err != nil || hw != want {
		t.Errorf("host with a loader: %v, %v; want the loader's profile", hw, err)
	}
}

func TestParseOptimizerAttn(t *testing.T) {
	if o, err := ParseOptimizer("ADAM"); o != strategies.OptimizerAdam || err != nil {
		t.Errorf("ADAM: %q, %v", o, err)
	}
	var ue *UsageError
	if _, err := ParseOptimizer("lion"); !errors.As(err, &ue) || err.Error() != `--optimizer="lion" is not valid; use sgd or adam` {
		t.Errorf("lion: %v", err)
	}
	for in, want := range map[string]strategies.Attention{"": strategies.AttentionEager, "Flash": strategies.AttentionFlash, "flash1": strategies.AttentionFlash1} {
		if a, err := ParseAttn(in); a != want || err != nil {
			t.Errorf("ParseAttn(%q) = %q, %v; want %q", in, a, err, want)
		}
	}
	if _, err := ParseAttn("sdpa"); !errors.As(err, &ue) || err.Error() != `--attn="sdpa" is not valid; use eager, flash or flash1` {
		t.Errorf("sdpa: %v", err)
	}
}
