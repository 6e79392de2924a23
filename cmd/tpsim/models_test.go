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
	if s := byName["seed-mlp"]; s.Kind != "mlp" || s.Layers != 2 || s.Params != 111010 {
		t.Errorf("seed-mlp: %+v", s)
	}
}
