package study

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/search"
)

const minimal = `models: [gpt-tiny]
hardware: [a100-80g]
gpus: [1, 2]
tokens: 1e9
`

func TestParseMinimalDefaults(t *testing.T) {
	f, err := Parse([]byte(minimal), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Top != DefaultTop || f.Sim != search.SimAuto || !reflect.DeepEqual(f.Objectives, []string{search.Time}) {
		t.Errorf("defaults: top %d sim %q objectives %v", f.Top, f.Sim, f.Objectives)
	}
	if !reflect.DeepEqual(f.GPUs, []int{1, 2}) || f.Tokens != 1e9 || len(f.Models) != 1 || f.Models[0].Spec != "gpt-tiny" {
		t.Errorf("parsed %+v", f)
	}
}

// The same study written as YAML and as JSON parses to the same File (positions aside).
func TestParseJSONEqualsYAML(t *testing.T) {
	y := `name: x
models: [gpt-tiny, {model: seed-mlp, global_batch: 16}]
hardware: [{hardware: h100-sxm, price_per_gpu_hour: 2.5, max_nodes: 4}]
gpus: {from: 8, to: 64, times: 2}
global_batch: 32
seq: 32
tokens: 2e12
objectives: [time, balanced]
fix: {attn: flash, precision: mixed}
what_if: [{name: nvl72, nvlink_domain: 72}, {name: big, hbm_gb: 141, inter_node_gbps: 800}]
top: 2
sim: off
currency: USD
`
	j := `{"name": "x",
 "models": ["gpt-tiny", {"model": "seed-mlp", "global_batch": 16}],
 "hardware": [{"hardware": "h100-sxm", "price_per_gpu_hour": 2.5, "max_nodes": 4}],
 "gpus": {"from": 8, "to": 64, "times": 2},
 "global_batch": 32, "seq": 32, "tokens": 2e12,
 "objectives": ["time", "balanced"],
 "fix": {"attn": "flash", "precision": "mixed"},
 "what_if": [{"name": "nvl72", "nvlink_domain": 72}, {"name": "big", "hbm_gb": 141, "inter_node_gbps": 800}],
 "top": 2, "sim": "off", "currency": "USD"}`
	fy, err := Parse([]byte(y), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fj, err := Parse([]byte(j), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	strip := func(f *File) {
		f.pos = nil
		for i := range f.Models {
			f.Models[i].Pos = Pos{}
		}
		for i := range f.Hardware {
			f.Hardware[i].Pos = Pos{}
		}
		for i := range f.WhatIfs {
			f.WhatIfs[i].Pos = Pos{}
		}
	}
	strip(fy)
	strip(fj)
	if !reflect.DeepEqual(fy, fj) {
		t.Errorf("YAML %+v\nJSON %+v", fy, fj)
	}
	if !reflect.DeepEqual(fy.GPUs, []int{8, 16, 32, 64}) || fy.Fix != "attn=flash,precision=mixed" || fy.Sim != "off" {
		t.Errorf("parsed %+v", fy)
	}
	if w := fy.WhatIfs[1]; w.HBMGB != 141 || w.InterNodeGbps != 800 || fy.Hardware[0].MaxNodes != 4 || fy.Models[1].GlobalBatch != 16 {
		t.Errorf("parsed %+v", fy)
	}
}

func TestParseErrors(t *testing.T) {
	presets := strings.Join(model.PresetNames(), ", ")
	cases := []struct {
		name, src string
		want      []string // substrings of the error, each required
	}{
		{"unknown key", minimal + "tokns: 3\n", []string{"s.yaml:5:1: tokns: unknown key \"tokns\"", "did you mean \"tokens\"", "valid keys: name, description, models"}},
		{"unknown nested key", "models: [{model: gpt-tiny, gbs: 3}]\nhardware: [a100-80g]\ngpus: [1]\ntokens: 1\n",
			[]string{"s.yaml:1:28: models[0].gbs: unknown key \"gbs\"; valid keys: model, global_batch, seq"}},
		{"prefix of a key", "models: [gpt-tiny]\nhardware: [{hardware: a100-80g, price: 2}]\ngpus: [1]\ntokens: 1\n",
			[]string{"s.yaml:2:33: hardware[0].price: unknown key \"price\" (did you mean \"price_per_gpu_hour\"?)"}},
		{"wrong type", strings.Replace(minimal, "gpus: [1, 2]", "gpus: [1, two]", 1), []string{"s.yaml:3:11: gpus[1]: must be an integer (a number of GPUs), not the string \"two\""}},
		{"wrong type tokens", strings.Replace(minimal, "tokens: 1e9", "tokens: [1]", 1), []string{"s.yaml:4:9: tokens: must be a number", "not a list"}},
		{"unknown model", strings.Replace(minimal, "gpt-tiny", "llama3-7b", 1), []string{"s.yaml:1:10: models[0]: unknown model \"llama3-7b\"", "did you mean \"llama2-7b\"", "valid names: " + presets}},
		{"unknown hardware", strings.Replace(minimal, "a100-80g", "tpu9", 1), []string{"s.yaml:2:12: hardware[0]: unknown hardware \"tpu9\"", "valid names: a100-80g, b200, b300, gb200-nvl72, gb300-nvl72, h100-96g, h100-sxm, h200, mi300x, mi325x, mi355x, host"}},
		{"empty gpus", strings.Replace(minimal, "gpus: [1, 2]", "gpus: []", 1), []string{"s.yaml:3:7: gpus: is an empty list; give at least one GPU count"}},
		{"empty models", strings.Replace(minimal, "models: [gpt-tiny]", "models: []", 1), []string{"s.yaml:1:9: models: is an empty list"}},
		{"empty range", strings.Replace(minimal, "gpus: [1, 2]", "gpus: {from: 8, to: 4, times: 2}", 1), []string{"gpus.to: is 4, below from=8: the range is empty"}},
		{"range without step", strings.Replace(minimal, "gpus: [1, 2]", "gpus: {from: 1, to: 4}", 1), []string{"a range needs times"}},
		{"huge range", strings.Replace(minimal, "gpus: [1, 2]", "gpus: {from: 1, to: 100000, step: 1}", 1), []string{"more than 1000"}},
		{"zero gpus", strings.Replace(minimal, "gpus: [1, 2]", "gpus: [0]", 1), []string{"gpus[0]: is 0; it must be at least 1"}},
		{"repeated gpus", strings.Replace(minimal, "gpus: [1, 2]", "gpus: [2, 2]", 1), []string{"gpus[1]: 2 is listed twice"}},
		{"missing keys", "models: [gpt-tiny]\n", []string{"missing key \"hardware\"", "missing key \"gpus\"", "missing key \"tokens\""}},
		{"bad objective", minimal + "objectives: [speed]\n", []string{"s.yaml:5:14: objectives[0]: unknown objective \"speed\"; valid: time, memory, comm, balanced"}},
		{"bad fix", minimal + "fix: {attn: fast}\n", []string{"s.yaml:5:6: fix:", "attn"}},
		{"unknown fix key", minimal + "fix: {atn: flash}\n", []string{"fix.atn: unknown key \"atn\"", "did you mean \"attn\""}},
		{"bad sim", minimal + "sim: sometimes\n", []string{"sim: unknown mode \"sometimes\"; valid: auto, on, off"}},
		{"what-if without change", minimal + "what_if: [{name: x}]\n", []string{"what_if[0]: changes nothing"}},
		{"what-if bad name", minimal + "what_if: [{name: \"NV 72\", nvlink_domain: 72}]\n", []string{"what_if[0].name: \"NV 72\" is not a valid name"}},
		{"what-if twice", minimal + "what_if: [{name: a, hbm_gb: 40}, {name: a, hbm_gb: 20}]\n", []string{"what_if[1].name: what-if \"a\" is already the name of what_if[0]"}},
		{"duplicate key", minimal + "tokens: 5\n", []string{"s.yaml:5:1: tokens: given twice (first at line 4)"}},
		{"not a mapping", "- a\n- b\n", []string{"must be a mapping with keys"}},
		{"empty file", "", []string{"the study file is empty"}},
		{"syntax", "models: [gpt-tiny\n", []string{"not valid YAML or JSON", "line"}},
		{"negative price", "models: [gpt-tiny]\nhardware: [{hardware: a100-80g, price_per_gpu_hour: -1}]\ngpus: [1]\ntokens: 1\n", []string{"s.yaml:2:53: hardware[0].price_per_gpu_hour: is -1; it must be positive"}},
		{"measure not bool", minimal + "measure: yes please\n", []string{"measure: must be true or false"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), "s.yaml")
			if err == nil {
				t.Fatalf("no error for\n%s", c.src)
			}
			if _, ok := AsError(err); !ok {
				t.Errorf("error %T is not a *study.Error", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nlacks %q", err, w)
				}
			}
		})
	}
}

// Every problem is reported at once, in the order of the file.
func TestParseReportsEveryProblem(t *testing.T) {
	src := "models: [nope]\nhardware: [nada]\ngpus: [x]\ntokens: 0\n"
	_, err := Parse([]byte(src), "s.yaml")
	e, ok := AsError(err)
	if !ok {
		t.Fatalf("error %v", err)
	}
	if len(e.Problems) != 4 {
		t.Fatalf("%d problems, want 4:\n%v", len(e.Problems), err)
	}
	for i, p := range e.Problems {
		if p.Pos.Line != i+1 {
			t.Errorf("problem %d at line %d: %v", i, p.Pos.Line, p.String("s.yaml"))
		}
	}
}

// The shipped studies parse and resolve.
func TestShippedStudiesLoad(t *testing.T) {
	entries, err := os.ReadDir("../examples/studies")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		n++
		path := "../examples/studies/" + e.Name()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(data, path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if hasHost(f) {
			continue // needs this machine's calibration; cmd/tpsim's test runs it
		}
		if _, err := Resolve(f, path, nil); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	if n < 3 {
		t.Errorf("%d shipped studies, want the three of the issue", n)
	}
}

func hasHost(f *File) bool {
	for _, h := range f.Hardware {
		if h.Spec == Host {
			return true
		}
	}
	return false
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	for _, p := range []string{"testdata/small.yaml", "../examples/studies/llama3.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"models": ["gpt-tiny"], "hardware": ["h200"], "gpus": {"from": 1, "to": 8, "step": 3}, "tokens": 5}`))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("models: [gpt-tiny]\nwhat_if: [{name: a, nvlink_domain: 3}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse(data, "fuzz.yaml")
		if err != nil {
			e, ok := AsError(err)
			if !ok || len(e.Problems) == 0 {
				t.Fatalf("error %v is not a *study.Error with problems", err)
			}
			if !utf8.ValidString(err.Error()) && utf8.Valid(data) {
				t.Fatalf("error is not UTF-8: %q", err.Error())
			}
			return
		}
		if len(fl.Models) == 0 || len(fl.Hardware) == 0 || len(fl.GPUs) == 0 || len(fl.Objectives) == 0 {
			t.Fatalf("accepted an empty sweep: %+v", fl)
		}
		if !(fl.Tokens > 0) || fl.Top < 1 || len(fl.GPUs) > MaxGPUCounts {
			t.Fatalf("accepted %+v", fl)
		}
		for i, g := range fl.GPUs {
			if g < 1 || (i > 0 && g <= fl.GPUs[i-1]) {
				t.Fatalf("GPU counts %v not ascending positive and unique", fl.GPUs)
			}
		}
	})
}
