package model

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPresetNamesSortedAndBuild(t *testing.T) {
	names := PresetNames()
	if !slices.IsSorted(names) {
		t.Errorf("PresetNames() = %v; not sorted", names)
	}
	want := []string{"deepseek-v3", "gpt-oss-120b", "gpt-oss-20b", "gpt-tiny", "gpt3-1.3b", "gpt3-13b", "gpt3-175b", "gpt3-6.7b",
		"kimi-k2", "llama2-13b", "llama2-70b", "llama2-7b", "llama3-405b", "llama3-70b", "llama3-8b", "llama4-maverick", "llama4-scout",
		"megatron-1t", "megatron-22b", "megatron-530b", "mixtral-8x22b", "mixtral-8x7b", "qwen3-235b-a22b", "qwen3-30b-a3b", "seed-mlp"}
	if !slices.Equal(names, want) {
		t.Errorf("PresetNames() = %v; want %v", names, want)
	}
	for _, name := range names {
		m, err := Preset(name)
		if err != nil {
			t.Errorf("Preset(%q): %v", name, err)
			continue
		}
		if err := m.Validate(); err != nil {
			t.Errorf("Preset(%q).Validate(): %v", name, err)
		}
		if m.Name != name {
			t.Errorf("Preset(%q).Name = %q", name, m.Name)
		}
		if m.Source == "" {
			t.Errorf("Preset(%q) has no Source", name)
		}
		if m.Published != 0 && m.Params() != m.Published {
			t.Errorf("Preset(%q).Params() = %d; published %d", name, m.Params(), m.Published)
		}
	}
}

// TestPresetParams checks every preset's parameter count against a figure derived by hand or
// published, and its default batch and sequence.
func TestPresetParams(t *testing.T) {
	tests := []struct {
		name       string
		params     int64
		published  bool // params is the authors' published exact count, kept in Model.Published
		batch, seq int
	}{
		// 100*1000+1000 + 1000*10+10 (the tensor-parallel tutorial's seed-mlp, docs/exec.md: Linear(100,1000)-ReLU-Linear(1000,10), batch 10).
		{"seed-mlp", 111_010, false, 10, 0},
		// embed 256*64 + pos 32*64 + 2 x (norms 4*64 + qkv 64*192+192 + proj 64*64+64 + fc1 64*256+256
		// + fc2 256*64+64) + norm 2*64 + head 64*256 = 16384 + 2048 + 2*49984 + 128 + 16384.
		{"gpt-tiny", 134_912, false, 8, 32},
		// Llama counts: the total of the Hugging Face safetensors of meta-llama/Llama-2-7b-hf, -13b-hf,
		// -70b-hf, Meta-Llama-3-8B, Meta-Llama-3-70B, Llama-3.1-405B. By hand for 7B: 32 x (4*4096^2 +
		// 3*4096*11008 + 2*4096) + 2*32000*4096 + 4096. Batches: Llama 2 section 2.2, 4M tokens / 4096;
		// Llama 3 section 3.4.1, 16M tokens / 8192.
		{"llama2-7b", 6_738_415_616, true, 1024, 4096},
		{"llama2-13b", 13_015_864_320, true, 1024, 4096},
		{"llama2-70b", 68_976_648_192, true, 1024, 4096},
		{"llama3-8b", 8_030_261_248, true, 2048, 8192},
		{"llama3-70b", 70_553_706_496, true, 2048, 8192},
		{"llama3-405b", 405_853_388_800, true, 2048, 8192},
		// GPT architecture, tied embeddings: l (12h^2 + 13h) + (V + s) h + 2h (final LayerNorm), which is
		// Narayanan et al. 2021's P (section 5.1) plus the final LayerNorm's 2h. Batches: Brown et al.
		// 2020 Table 2.1 tokens / 2048 (175B: Narayanan et al. 2021 section 5.2); Korthikanti et al. 2022
		// Table 3 (22B); Narayanan et al. 2021 Table 1 (530B, 1T).
		{"gpt3-1.3b", 24*(12*2048*2048+13*2048) + (51200+2048)*2048 + 2*2048, false, 512, 2048},
		{"gpt3-6.7b", 32*(12*4096*4096+13*4096) + (51200+2048)*4096 + 2*4096, false, 1024, 2048},
		{"gpt3-13b", 40*(12*5120*5120+13*5120) + (51200+2048)*5120 + 2*5120, false, 1024, 2048},
		{"gpt3-175b", 96*(12*12288*12288+13*12288) + (51200+2048)*12288 + 2*12288, false, 1536, 2048},
		{"megatron-22b", 48*(12*6144*6144+13*6144) + (51200+2048)*6144 + 2*6144, false, 4, 2048},
		{"megatron-530b", 105*(12*20480*20480+13*20480) + (51200+2048)*20480 + 2*20480, false, 2520, 2048},
		{"megatron-1t", 128*(12*25600*25600+13*25600) + (51200+2048)*25600 + 2*25600, false, 3072, 2048},
	}
	for _, tt := range tests {
		m, err := Preset(tt.name)
		if err != nil {
			t.Fatalf("Preset(%q): %v", tt.name, err)
		}
		if got := m.Params(); got != tt.params {
			t.Errorf("%s: Params() = %d; want %d", tt.name, got, tt.params)
		}
		if tt.published && m.Published != tt.params {
			t.Errorf("%s: Published = %d; want %d", tt.name, m.Published, tt.params)
		}
		if !tt.published && m.Published != 0 {
			t.Errorf("%s: Published = %d; want 0 (no exact published count)", tt.name, m.Published)
		}
		if m.Batch != tt.batch || m.Seq != tt.seq {
			t.Errorf("%s: batch %d seq %d; want batch %d seq %d", tt.name, m.Batch, m.Seq, tt.batch, tt.seq)
		}
	}
}

// TestGPTFormula keeps the GPT and Megatron presets within 0.5% of Narayanan et al. 2021 section 5.1,
// P = 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h)), and of the sizes the papers print.
func TestGPTFormula(t *testing.T) {
	tests := []struct {
		name    string
		printed float64 // parameters as the paper prints them
		tol     float64 // relative tolerance against printed
	}{
		// Brown et al. 2020 Table 2.1 rounds to 2-3 digits: 1.3B is 1.318B here (the paper's count
		// may be of an untied or unpadded vocabulary), so 2%.
		{"gpt3-1.3b", 1.3e9, 0.02},
		{"gpt3-6.7b", 6.7e9, 0.02},
		{"gpt3-13b", 13e9, 0.02},
		{"gpt3-175b", 175e9, 0.02},
		{"megatron-22b", 22e9, 0.02},       // Korthikanti et al. 2022 Table 3
		{"megatron-530b", 529.6e9, 0.0005}, // Narayanan et al. 2021 Table 1
		{"megatron-1t", 1008.0e9, 0.0005},  // Narayanan et al. 2021 Table 1
	}
	for _, tt := range tests {
		m, err := Preset(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		c := m.Transformer
		l, h, v, s := float64(c.Layers), float64(c.Hidden), float64(c.Vocab), float64(c.Seq)
		p := 12 * l * h * h * (1 + 13/(12*h) + (v+s)/(12*l*h))
		got := float64(m.Params())
		if d := math.Abs(got-p) / p; d > 0.005 {
			t.Errorf("%s: Params() = %.0f; Narayanan formula %.0f (%.2f%% off)", tt.name, got, p, 100*d)
		}
		if d := math.Abs(got-tt.printed) / tt.printed; d > tt.tol {
			t.Errorf("%s: Params() = %.4g; the paper prints %.4g (%.2f%% off)", tt.name, got, tt.printed, 100*d)
		}
		if c.Heads*c.HeadDim != c.Hidden || c.FFN != 4*c.Hidden || !c.Tied || !c.Learned || !c.Bias || c.Gated || c.RMSNorm {
			t.Errorf("%s: %+v is not the GPT architecture Megatron-LM trains", tt.name, *c)
		}
	}
}

func TestGPTTinyShardable(t *testing.T) {
	m, err := Preset("gpt-tiny")
	if err != nil {
		t.Fatal(err)
	}
	c := m.Transformer
	for _, tp := range []int{1, 2, 4} {
		if c.Heads%tp != 0 || c.KVHeads%tp != 0 || c.FFN%tp != 0 || c.Vocab%tp != 0 {
			t.Errorf("gpt-tiny %+v does not split over tp=%d", *c, tp)
		}
	}
	// The tied flag, LayerNorm with bias, GELU and a learned position table as the brief for gpt-tiny says.
	if c.Tied || c.RMSNorm || c.Gated || !c.Bias || !c.Learned {
		t.Errorf("gpt-tiny %+v; want untied, LayerNorm, GELU, biases, learned positions", *c)
	}
}

func TestPresetIsACopy(t *testing.T) {
	a, _ := Preset("gpt-tiny")
	a.Batch = 99
	a.Find("layers.0.attn.qkv").Out = 1
	b, _ := Preset("gpt-tiny")
	if b.Batch != 8 || b.Find("layers.0.attn.qkv").Out != 192 {
		t.Errorf("changing one Preset result changed the next: batch %d qkv out %d", b.Batch, b.Find("layers.0.attn.qkv").Out)
	}
}

func TestFQN(t *testing.T) {
	tests := []struct {
		model string
		fqn   string
		kind  Kind
	}{
		// torch.nn.Sequential names its children "0", "1", "2".
		{"seed-mlp", "0", KindLinear},
		{"seed-mlp", "1", KindReLU},
		{"seed-mlp", "2", KindLinear},
		// doc.go's transformer names.
		{"llama2-7b", "embed", KindEmbedding},
		{"llama2-7b", "layers.0.attn.qkv", KindLinear},
		{"llama2-7b", "layers.0.norm1", KindRMSNorm},
		{"llama2-7b", "layers.31.mlp.down", KindLinear},
		{"llama2-7b", "layers.31.mlp.gate", KindLinear},
		{"llama2-7b", "norm", KindRMSNorm},
		{"llama2-7b", "head", KindLinear},
		{"gpt3-175b", "pos", KindEmbedding},
		{"gpt3-175b", "layers.95.mlp.fc1", KindLinear},
		{"gpt3-175b", "layers.95.norm2", KindLayerNorm},
		{"gpt-tiny", "head", KindLinear},
		{"gpt-tiny", "pos", KindEmbedding},
	}
	for _, tt := range tests {
		m, err := Preset(tt.model)
		if err != nil {
			t.Fatal(err)
		}
		x := m.Find(tt.fqn)
		if x == nil {
			t.Errorf("%s: no module %q", tt.model, tt.fqn)
			continue
		}
		if x.Kind != tt.kind {
			t.Errorf("%s: %q is %s; want %s", tt.model, tt.fqn, x.Kind, tt.kind)
		}
	}
	absent := []struct{ model, fqn string }{
		{"llama2-7b", "pos"},              // rotary
		{"llama2-7b", "layers.32"},        // 32 layers: 0..31
		{"gpt3-175b", "head"},             // tied to embed
		{"llama2-7b", "layers.0.mlp.fc1"}, // SwiGLU has gate, up, down
	}
	for _, tt := range absent {
		m, _ := Preset(tt.model)
		if m.Find(tt.fqn) != nil {
			t.Errorf("%s: has module %q; want none", tt.model, tt.fqn)
		}
	}
	m, _ := Preset("seed-mlp")
	var names []string
	for _, n := range m.Root.Walk() {
		names = append(names, n.FQN)
	}
	if want := []string{"", "0", "1", "2"}; !slices.Equal(names, want) {
		t.Errorf("seed-mlp Walk() names %q; want %q", names, want)
	}
}

func TestUnknownPreset(t *testing.T) {
	for _, f := range []func(string) (*Model, error){Preset, Load} {
		_, err := f("gpt5")
		if err == nil {
			t.Fatal("no error for an unknown model")
		}
		want := `model: unknown model "gpt5"; valid names: deepseek-v3, gpt-oss-120b, gpt-oss-20b, gpt-tiny, gpt3-1.3b, gpt3-13b, gpt3-175b, gpt3-6.7b, kimi-k2, llama2-13b, llama2-70b, llama2-7b, llama3-405b, llama3-70b, llama3-8b, llama4-maverick, llama4-scout, megatron-1t, megatron-22b, megatron-530b, mixtral-8x22b, mixtral-8x7b, qwen3-235b-a22b, qwen3-30b-a3b, seed-mlp (or a path to a Hugging Face config.json)`
		if err.Error() != want {
			t.Errorf("error %q;\nwant %q", err, want)
		}
	}
}

func TestLoad(t *testing.T) {
	gpt2, err := os.ReadFile("testdata/gpt2.json")
	if err != nil {
		t.Fatal(err)
	}
	tiny, err := os.ReadFile("testdata/tiny-gpt.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hfDir := filepath.Join(dir, "gpt2-hf")
	if err := os.Mkdir(hfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hfDir, "config.json"), gpt2, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mymodel"), tiny, 0o644); err != nil {
		t.Fatal(err)
	}
	// A file that shadows a preset name: the preset wins unless the argument looks like a path.
	if err := os.WriteFile(filepath.Join(dir, "gpt-tiny"), tiny, 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		arg    string
		name   string
		params int64
	}{
		{"seed-mlp", "seed-mlp", 111_010},
		{"testdata/gpt2.json", "gpt2", 124_439_808},                   // named after the file
		{"testdata/tiny-gpt.json", "tiny-gpt", 42_368},                // named by its "name"
		{hfDir, "gpt2-hf", 124_439_808},                               // a directory stands for its config.json
		{filepath.Join(hfDir, "config.json"), "gpt2-hf", 124_439_808}, // named after its directory
	}
	for _, tt := range tests {
		m, err := Load(tt.arg)
		if err != nil {
			t.Errorf("Load(%q): %v", tt.arg, err)
			continue
		}
		if m.Name != tt.name || m.Params() != tt.params {
			t.Errorf("Load(%q) = %q with %d params; want %q with %d", tt.arg, m.Name, m.Params(), tt.name, tt.params)
		}
	}

	t.Chdir(dir)
	if m, err := Load("mymodel"); err != nil || m.Name != "tiny-gpt" {
		t.Errorf("Load(\"mymodel\") (an existing file) = %v, %v; want tiny-gpt", m, err)
	}
	if m, err := Load("gpt-tiny"); err != nil || m.Params() != 134_912 {
		t.Errorf("Load(\"gpt-tiny\") with a file of that name = %v, %v; want the preset", m, err)
	}
	if m, err := Load("./gpt-tiny"); err != nil || m.Params() != 42_368 {
		t.Errorf("Load(\"./gpt-tiny\") = %v, %v; want the file", m, err)
	}
	_, err = Load("missing.json")
	if err == nil || !strings.HasPrefix(err.Error(), "model: missing.json does not exist;") || !strings.Contains(err.Error(), "seed-mlp") {
		t.Errorf("Load(\"missing.json\") error %v; want one that says it does not exist and lists the presets", err)
	}
}

// TestLoadMLPName checks the "mlp:D0,...,Dn" form: the same model as the {"mlp": ...} file form,
// and clear errors for bad widths.
func TestLoadMLPName(t *testing.T) {
	m, err := Load("mlp:1024,4096,1024")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Spec{Name: "mlp:1024,4096,1024", MLP: &MLPSpec{Dims: []int{1024, 4096, 1024}, Batch: 1}}.Build()
	if err != nil {
		t.Fatal(err)
	}
	// 1024*4096 + 4096 + 4096*1024 + 1024 parameters, by hand.
	if m.Name != want.Name || m.Params() != 8_393_728 || want.Params() != 8_393_728 || m.Batch != 1 || m.InDim != 1024 {
		t.Errorf("Load(mlp:1024,4096,1024) = %q, %d params, batch %d, in %d; want %q, 8393728, 1, 1024", m.Name, m.Params(), m.Batch, m.InDim, want.Name)
	}
	for arg, wantErr := range map[string]string{
		"mlp:1024,x,1024": `width "x" is not an integer`,
		"mlp:1024":        "needs at least an input and an output width",
		"mlp:1024,0":      "widths must be positive",
		"mlp:":            `width "" is not an integer`,
	} {
		if _, err := Load(arg); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Load(%q) error %v; want one containing %q", arg, err, wantErr)
		}
	}
}
