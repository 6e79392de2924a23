package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/reports"
	"github.com/tpsim/tpsim/search"
	"github.com/tpsim/tpsim/strategies"
)

// Every strategy plan prints pastes back: its top 10 of several plans, as the table prints them
// (search.Label) and as the JSON does, given to tpsim predict and tpsim sim, reproduce the row's
// step time and memory, and its simulated step, to the byte in JSON.
func TestPlanStrategiesPasteBack(t *testing.T) {
	for _, args := range [][]string{
		{"--model", "gpt-tiny", "--gpus", "4"},
		{"--model", "gpt3-1.3b", "--gpus", "16", "--global-batch", "64", "--hardware", "h100-sxm"},
		{"--model", "llama2-7b", "--gpus", "32", "--global-batch", "64", "--fix", "attn=flash"},
		{"--model", "gpt3-13b", "--gpus", "64", "--global-batch", "128", "--fix", "pp=4"},
	} {
		p, _, _ := planJSON(t, cli.ExitOK, append(args, "--top", "10", "--sim", "on", "--sim-top", "10")...)
		hw := "a100-80g"
		for i, a := range args {
			if a == "--hardware" {
				hw = args[i+1]
			}
		}
		if len(p.Top) < 3 {
			t.Fatalf("%v: only %d rows", args, len(p.Top))
		}
		for _, e := range p.Top {
			st, err := strategies.Parse(e.Strategy)
			if err != nil {
				t.Fatal(err)
			}
			for _, pasted := range []string{search.Label(st), e.Strategy} {
				out, errs, code := runArgs(t, "predict", "--model", p.Model, "--hardware", hw, "--strategy", pasted, "--json")
				if code != cli.ExitOK {
					t.Fatalf("predict %s: %s", pasted, errs)
				}
				var r struct {
					Strategy string          `json:"strategy"`
					Time     json.RawMessage `json:"time_s"`
					Memory   json.RawMessage `json:"memory_bytes"`
				}
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatal(err)
				}
				wantT, _ := json.Marshal(e.Time)
				wantM, _ := json.Marshal(e.Memory)
				if r.Strategy != e.Strategy || compact(t, r.Time) != compact(t, wantT) || compact(t, r.Memory) != compact(t, wantM) {
					t.Errorf("%v row %d %s: predict says %s %s %s, plan %s %s %s", args, e.Rank, pasted, r.Strategy, r.Time, r.Memory, e.Strategy, wantT, wantM)
				}
				out, errs, code = runArgs(t, "sim", "--model", p.Model, "--hardware", hw, "--strategy", pasted, "--json")
				if code != cli.ExitOK {
					t.Fatalf("sim %s: %s", pasted, errs)
				}
				var s struct {
					Time struct {
						Step json.RawMessage `json:"step"`
					} `json:"time_s"`
				}
				if err := json.Unmarshal([]byte(out), &s); err != nil {
					t.Fatal(err)
				}
				want, _ := json.Marshal(e.SimStep)
				if e.SimStep == nil || string(s.Time.Step) != string(want) {
					t.Errorf("%v row %d %s: sim says step %s, plan simulated %s", args, e.Rank, pasted, s.Time.Step, want)
				}
			}
		}
	}
}

func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Mesh dimensions have one order: the reports' figures follow strategies.DimOrder.
func TestMeshDimsOneOrder(t *testing.T) {
	if !reflect.DeepEqual(reports.MeshDims, strategies.DimNames()) {
		t.Errorf("reports.MeshDims %v, strategies.DimOrder %v", reports.MeshDims, strategies.DimOrder)
	}
}
