package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tpsim/tpsim/cmd/tpsim/internal/cli"
	"github.com/tpsim/tpsim/model"
)

func TestModelsTable(t *testing.T) {
	out, errs, code := runArgs(t, "models")
	if code != cli.ExitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1+len(model.PresetNames()) {
		t.Errorf("%d lines, want a header and %d models:\n%s", len(lines), len(model.PresetNames()), out)
	}
	for _, s := range []string{
		"NAME", "PARAMS",
		"6,738,415,616", "6.74B", // Llama-2-7B (Touvron et al. 2023)
		"8,030,261,248", "8.03B", // Llama-3-8B (Meta 2024)
		"32/8",                       // Llama-3-8B grouped-query attention
		"seed-mlp", "111,010", "mlp", // 100*1000+1000 + 1000*10+10
		"ACTIVE", "46,702,792,704", "12.9B", // Mixtral 8x7B: 46.7B total, 12.9B active (Jiang et al. 2024)
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestModelsJSON(t *testing.T) {
	out, errs, code := runArgs(t, "models", "--json")
	if code != cli.ExitOK || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var infos []model.Info
	if err := json.Unmarshal([]byte(out), &infos); err != nil {
		t.Fatal(err)
	}
	if len(infos) != len(model.PresetNames()) {
		t.Fatalf("%d models, want %d", len(infos), len(model.PresetNames()))
	}
	byName := map[string]model.Info{}
	for _, m := range infos {
		byName[m.Name] = m
	}
	l := byName["llama2-7b"]
	if l.Params != 6738415616 || l.Layers != 32 || l.Hidden != 4096 || l.Heads != 32 || l.Kind != "transformer" || l.Family != "llama" {
		t.Errorf("llama2-7b: %+v", l)
	}
	// Mixtral 8x7B: 12,879,925,248 active of 46,702,792,704 (by hand in model/moe_test.go), 8 experts, top-2.
	if x := byName["mixtral-8x7b"]; x.Params != 46702792704 || x.Active != 12879925248 || x.Experts != 8 || x.TopK != 2 || l.Active != l.Params {
		t.Errorf("mixtral-8x7b: %+v; llama2-7b active %d", x, l.Active)
	}
	if s := byName["seed-mlp"]; s.Kind != "mlp" || s.Layers != 2 || s.Params != 111010 {
		t.Errorf("seed-mlp: %+v", s)
	}
}

// The issue: no command printed a config's exact parameter count. models --model prints one
// model, a preset or a Hugging Face config.json. Llama 2 7B from its config, by hand: per layer
// q, k, v, o are 4 x 4096^2 = 67,108,864, gate, up, down 3 x 4096 x 11008 = 135,266,304, two
// RMSNorms 2 x 4096 = 8,192, so 202,383,360; x 32 layers = 6,476,267,520; the embedding and the
// untied head 2 x 32000 x 4096 = 262,144,000 and the final norm 4,096: 6,738,415,616 in all, the
// total of meta-llama/Llama-2-7b-hf's safetensors.
func TestModelsOneModel(t *testing.T) {
	for _, arg := range []string{"../../model/testdata/llama-2-7b.json", "llama2-7b"} {
		out, errs, code := runArgs(t, "models", "--model", arg)
		if code != cli.ExitOK || errs != "" {
			t.Fatalf("%s: exit %d: %s", arg, code, errs)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || !strings.Contains(lines[1], "6,738,415,616") {
			t.Errorf("%s: want a header and one row with 6,738,415,616:\n%s", arg, out)
		}
	}
	out, _, code := runArgs(t, "models", "--model", "../../model/testdata/llama-2-7b.json", "--json")
	var infos []model.Info
	if err := json.Unmarshal([]byte(out), &infos); code != cli.ExitOK || err != nil || len(infos) != 1 || infos[0].Params != 6_738_415_616 {
		t.Errorf("--json: exit %d, %v, %+v", code, err, infos)
	}
	if _, errs, code := runArgs(t, "models", "--model", "no-such-model"); code == cli.ExitOK || !strings.Contains(errs, `unknown model "no-such-model"`) {
		t.Errorf("unknown model: exit %d, %q", code, errs)
	}
}
