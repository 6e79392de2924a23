package model

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// presetsJSON holds every preset in tpsim's JSON form (see Spec); each entry's "source" cites the
// paper or config its sizes come from.
//
//go:embed presets.json
var presetsJSON []byte

// presetSpecs parses presetsJSON once. It panics if the embedded file is broken, which is a bug
// that the tests catch.
var presetSpecs = sync.OnceValue(func() map[string]Spec {
	dec := json.NewDecoder(bytes.NewReader(presetsJSON))
	dec.DisallowUnknownFields()
	var list []Spec
	if err := dec.Decode(&list); err != nil {
		panic("model: presets.json: " + err.Error())
	}
	specs := make(map[string]Spec, len(list))
	for _, s := range list {
		if _, dup := specs[s.Name]; dup {
			panic("model: presets.json: duplicate preset " + s.Name)
		}
		specs[s.Name] = s
	}
	return specs
})

// PresetNames returns the names of the preset models, sorted.
func PresetNames() []string {
	var names []string
	for name := range presetSpecs() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Preset returns a new copy of the preset model called name; see PresetNames. The caller may change
// it freely.
func Preset(name string) (*Model, error) {
	s, ok := presetSpecs()[name]
	if !ok {
		return nil, unknownModel(name)
	}
	return s.Build()
}

func unknownModel(name string) error {
	return fmt.Errorf("model: unknown model %q; valid names: %s (or a path to a Hugging Face config.json)",
		name, strings.Join(PresetNames(), ", "))
}

// Load returns a preset model, or the model of a file: a Hugging Face config.json or a tpsim model
// file (see Spec; FromHFConfig reads both). The argument is a path when it ends in ".json", contains
// a path separator, or names an existing file or directory that is not a preset; a directory stands
// for its config.json. A model read from a file is named by its "name" field, else by the file
// (".../Llama-2-7b-hf/config.json" is "Llama-2-7b-hf", "llama.json" is "llama").
//
// "mlp:D0,D1,...,Dn" is an MLP of ReLU-separated Linear layers D0 -> D1 -> ... -> Dn (as an
// {"mlp": {"dims": [...]}} model file) at batch 1, named by the argument; commands set the batch
// with --batch (tpsim exec --model mlp:1024,4096,1024 --batch 512).
func Load(nameOrPath string) (*Model, error) {
	if dims, ok := strings.CutPrefix(nameOrPath, "mlp:"); ok {
		return mlpFromName(nameOrPath, dims)
	}
	isPath := strings.HasSuffix(nameOrPath, ".json") || strings.ContainsRune(nameOrPath, '/') ||
		strings.ContainsRune(nameOrPath, filepath.Separator)
	if !isPath {
		if _, ok := presetSpecs()[nameOrPath]; ok {
			return Preset(nameOrPath)
		}
		if _, err := os.Stat(nameOrPath); err != nil {
			return nil, unknownModel(nameOrPath)
		}
	}
	path := nameOrPath
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "config.json")
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("model: %s does not exist; give a Hugging Face config.json, a tpsim model file, or a preset name: %s",
			path, strings.Join(PresetNames(), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	return decodeConfig(data, "", nameFromPath(path), path)
}

// mlpFromName builds the model of Load's "mlp:D0,D1,...,Dn" form; dims is the part after "mlp:".
func mlpFromName(name, dims string) (*Model, error) {
	var ds []int
	for _, f := range strings.Split(dims, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("model: %q: width %q is not an integer; write mlp:D0,D1,...,Dn, e.g. mlp:1024,4096,1024", name, f)
		}
		ds = append(ds, d)
	}
	return MLP(name, KindReLU, 1, ds...)
}

// nameFromPath names a model after its file: the directory of a config.json, else the file name
// without ".json".
func nameFromPath(path string) string {
	base := filepath.Base(path)
	if base != "config.json" {
		return strings.TrimSuffix(base, ".json")
	}
	if abs, err := filepath.Abs(path); err == nil {
		if dir := filepath.Base(filepath.Dir(abs)); dir != "/" && dir != "." && dir != string(filepath.Separator) {
			return dir
		}
	}
	return "config"
}
