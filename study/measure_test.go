package study

import (
	"context"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/hardware"
)

// The issue: `measure: true` in a study on GPU hardware was ignored without a word. Only this
// machine can be measured (exec runs on its cores), and only the host hardware is this machine:
// a study with no host hardware is an error at the key; in a study with host, the GPU cells say
// they were not measured.
func TestMeasureWithoutHost(t *testing.T) {
	f, err := Parse([]byte(minimal+"measure: true\n"), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(f, "s.yaml", nil)
	if err == nil || !strings.Contains(err.Error(), "s.yaml:5:1: measure: measure: true measures each winner on this machine") ||
		!strings.Contains(err.Error(), "this study has none (a100-80g); add host to hardware, or remove measure") {
		t.Errorf("measure: true on a100-80g alone: %v", err)
	}
	// Without measure the same study resolves.
	f, _ = Parse([]byte(minimal), "s.yaml")
	if _, err := Resolve(f, "s.yaml", nil); err != nil {
		t.Errorf("without measure: %v", err)
	}
}

func TestMeasureNotesGPUCells(t *testing.T) {
	src := "models: [gpt-tiny]\nhardware: [host, a100-80g]\ngpus: [1]\ntokens: 1e9\nfix: {precision: fp32}\nmeasure: true\n"
	f, err := Parse([]byte(src), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	load := func(spec string) (*hardware.Hardware, error) {
		if spec == Host {
			return hardware.Load("../cmd/tpsim/testdata/host.json") // a calibrated host profile, not this machine's
		}
		return hardware.Load(spec)
	}
	st, err := Resolve(f, "s.yaml", load)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), st, t.TempDir(), Options{Version: testVersion})
	if err != nil {
		t.Fatal(err)
	}
	notes := map[string]string{}
	for _, r := range res.Records {
		notes[r.Hardware] = r.MeasureNote
	}
	if notes["a100-80g"] != "not measured: only the host hardware is this machine" {
		t.Errorf("a100-80g's cell: note %q; want that it was not measured and why", notes["a100-80g"])
	}
	if notes[Host] != "not measured: no measurer" { // Options.Measure is nil here
		t.Errorf("host's cell: note %q", notes[Host])
	}
}
