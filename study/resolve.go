package study

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/model"
	"github.com/tpsim/tpsim/units"
)

// HardwareLoader loads a hardware entry's spec (a preset, "host" or a path, already joined to the
// study's directory). hardware.Load serves everything but "host", which needs this machine's
// calibration (cmd/tpsim gives a loader that calibrates or reads the cached profile).
type HardwareLoader func(spec string) (*hardware.Hardware, error)

// Study is a resolved study file: models and hardware loaded, what-ifs applied, cells listed.
type Study struct {
	File     *File
	Path     string // the study file as given
	Models   []Model
	Variants []Variant
	Cells    []Cell
}

// Model is one model of a study, loaded.
type Model struct {
	Entry  ModelEntry
	M      *model.Model
	Name   string
	Params int64
	// Arg is what `tpsim plan --model` takes to load the same model: the preset name, or the path
	// joined to the study file's directory.
	Arg  string
	hash string // of the model's JSON
}

// Variant is one hardware of a study as given, or one what-if applied to it.
type Variant struct {
	Entry  HardwareEntry
	Base   string  // the hardware's own name
	WhatIf *WhatIf // nil: as given
	HW     *hardware.Hardware
	// Name is the hardware's name, with "+" and the what-if's name for a what-if.
	Name string
	// NodeSize is the number of devices in one node (the innermost level's unit); 0 when the
	// hardware has a single level.
	NodeSize int
	// Preset reports whether `tpsim plan --hardware Name` loads exactly this hardware; otherwise
	// the report writes its JSON to hardware/Name.json for the plan command line.
	Preset bool
	hash   string // of the hardware's JSON
}

// Cell is one model on one hardware variant on one GPU count.
type Cell struct {
	Model, Variant int // indices into Study.Models and Study.Variants
	GPUs           int
	GlobalBatch    int // 0: the model's default
	Seq            int // 0: the model's default
	// Limit says why the cell is not planned: more GPUs than the hardware has; empty otherwise.
	Limit string
}

// Load reads and resolves a study file; hw loads hardware (nil: hardware.Load).
func Load(path string, hw HardwareLoader) (*Study, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("study: %w; give the path of a study file (examples/studies has some)", err)
	}
	f, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	return Resolve(f, path, hw)
}

// Resolve loads the models and hardware that f names (paths relative to the directory of path),
// applies its what-ifs and lists its cells.
func Resolve(f *File, path string, load HardwareLoader) (*Study, error) {
	if load == nil {
		load = hardware.Load
	}
	dir := filepath.Dir(path)
	at := func(spec string) string {
		if isPath(spec) && !filepath.IsAbs(spec) {
			return filepath.Join(dir, spec)
		}
		return spec
	}
	st := &Study{File: f, Path: path}
	var probs []Problem
	fail := func(pos Pos, p, format string, a ...any) {
		probs = append(probs, Problem{Pos: pos, Path: p, Msg: fmt.Sprintf(format, a...)})
	}
	names := map[string]int{}
	for i, e := range f.Models {
		arg := at(e.Spec)
		m, err := model.Load(arg)
		if err != nil {
			fail(e.Pos, index("models", i), "%v", err)
			continue
		}
		if j, dup := names[m.Name]; dup {
			fail(e.Pos, index("models", i), "model %q is already models[%d]; list each model once", m.Name, j)
			continue
		}
		names[m.Name] = i
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("study: model %s: %w", m.Name, err)
		}
		st.Models = append(st.Models, Model{Entry: e, M: m, Name: m.Name, Params: m.Params(), Arg: arg, hash: digest(b)})
	}
	hwNames := map[string]int{}
	var bases []Variant
	hwFailed := false
	for i, e := range f.Hardware {
		h, err := load(at(e.Spec))
		if err != nil {
			fail(e.Pos, index("hardware", i), "%v", err)
			hwFailed = true
			continue
		}
		if j, dup := hwNames[h.Name]; dup {
			fail(e.Pos, index("hardware", i), "hardware %q is already hardware[%d]; list each once (a changed copy is a what_if)", h.Name, j)
			continue
		}
		hwNames[h.Name] = i
		bases = append(bases, Variant{Entry: e, Base: h.Name, HW: h, Name: h.Name, Preset: slices.Contains(hardware.Names(), e.Spec)})
	}
	for i, w := range f.WhatIfs {
		for j, name := range w.Hardware {
			// A hardware that failed to load has no name to check against.
			if _, ok := hwNames[name]; !ok && !hwFailed {
				known := make([]string, 0, len(bases))
				for _, b := range bases {
					known = append(known, b.Name)
				}
				fail(w.Pos, fmt.Sprintf("what_if[%d].hardware[%d]", i, j), "%q is not a hardware of this study; valid names: %s", name, strings.Join(known, ", "))
			}
		}
	}
	if f.Measure && !hwFailed && !slices.ContainsFunc(bases, func(b Variant) bool { return b.Base == Host }) {
		// measure: true on GPU hardware alone was ignored without a word. Only this machine can
		// be measured (exec runs on its CPU cores), and only the host hardware is this machine.
		known := make([]string, 0, len(bases))
		for _, b := range bases {
			known = append(known, b.Name)
		}
		fail(f.pos["measure"], "measure", "measure: true measures each winner on this machine with exec, which only the host hardware is, and this study has none (%s); add host to hardware, or remove measure",
			strings.Join(known, ", "))
	}
	if len(probs) > 0 {
		return nil, &Error{File: path, Problems: probs}
	}
	for _, b := range bases {
		st.Variants = append(st.Variants, b)
		for i := range f.WhatIfs {
			w := &f.WhatIfs[i]
			if len(w.Hardware) > 0 && !slices.Contains(w.Hardware, b.Name) {
				continue
			}
			h, err := Apply(b.HW, w)
			if err != nil {
				fail(w.Pos, index("what_if", i), "%v", err)
				continue
			}
			st.Variants = append(st.Variants, Variant{Entry: b.Entry, Base: b.Name, WhatIf: w, HW: h, Name: h.Name})
		}
	}
	if len(probs) > 0 {
		return nil, &Error{File: path, Problems: probs}
	}
	for i := range st.Variants {
		v := &st.Variants[i]
		if len(v.HW.Levels) > 1 {
			v.NodeSize = v.HW.Levels[0].Size
		}
		b, err := json.Marshal(v.HW)
		if err != nil {
			return nil, fmt.Errorf("study: hardware %s: %w", v.Name, err)
		}
		v.hash = digest(b)
	}
	for mi, m := range st.Models {
		gbs, seq := f.GlobalBatch, f.Seq
		if m.Entry.GlobalBatch > 0 {
			gbs = m.Entry.GlobalBatch
		}
		if m.Entry.Seq > 0 {
			seq = m.Entry.Seq
		}
		for vi, v := range st.Variants {
			for _, g := range f.GPUs {
				st.Cells = append(st.Cells, Cell{Model: mi, Variant: vi, GPUs: g, GlobalBatch: gbs, Seq: seq, Limit: v.limit(g)})
			}
		}
	}
	return st, nil
}

// limit says why g GPUs of v are more than there are, or "".
func (v *Variant) limit(g int) string {
	e := v.Entry
	if e.MaxGPUs > 0 && g > e.MaxGPUs {
		return fmt.Sprintf("%d GPUs is more than the %d of %s (max_gpus)", g, e.MaxGPUs, v.Base)
	}
	if e.MaxNodes > 0 {
		if v.NodeSize == 0 {
			if g > e.MaxNodes {
				return fmt.Sprintf("%d GPUs is more than %d nodes of one GPU each of %s (max_nodes)", g, e.MaxNodes, v.Base)
			}
		} else if nodes := (g + v.NodeSize - 1) / v.NodeSize; nodes > e.MaxNodes {
			return fmt.Sprintf("%d GPUs need %d nodes of %d; %s has %d (max_nodes)", g, nodes, v.NodeSize, v.Base, e.MaxNodes)
		}
	}
	return ""
}

// Apply returns a copy of h with the what-if's changes, named h.Name+"+"+w.Name, checked by
// hardware.Validate. nvlink_domain sets the devices of the innermost level; inter_node_gbps the
// bandwidth of the level above it; hbm_gb the device memory.
func Apply(h *hardware.Hardware, w *WhatIf) (*hardware.Hardware, error) {
	c := *h
	c.Name = h.Name + "+" + w.Name
	c.Levels = slices.Clone(h.Levels)
	c.Sources = nil
	for k, v := range h.Sources {
		if c.Sources == nil {
			c.Sources = map[string]string{}
		}
		c.Sources[k] = v
	}
	note := func(key, what string) {
		if c.Sources == nil {
			c.Sources = map[string]string{}
		}
		c.Sources[key] = "what-if " + w.Name + " of the study: " + what
	}
	if w.NVLinkDomain > 0 {
		if len(c.Levels) < 2 {
			return nil, fmt.Errorf("what-if %s: nvlink_domain needs hardware with a node level and a level above it; %s has %d level(s)", w.Name, h.Name, len(c.Levels))
		}
		c.Levels[0].Size = w.NVLinkDomain
		note("levels."+c.Levels[0].Name+".devices", strconv.Itoa(w.NVLinkDomain)+" devices")
	}
	if w.InterNodeGbps > 0 {
		if len(c.Levels) < 2 {
			return nil, fmt.Errorf("what-if %s: inter_node_gbps needs hardware with a level above the node; %s has %d level(s)", w.Name, h.Name, len(c.Levels))
		}
		// Gb/s (gigabits) to bytes per second: 1 Gb/s = 1e9/8 bytes/s.
		c.Levels[1].Bandwidth = units.BytesPerSecond(w.InterNodeGbps * 1e9 / 8)
		note("levels."+c.Levels[1].Name+".bandwidth_bytes_per_s", strconv.FormatFloat(w.InterNodeGbps, 'g', -1, 64)+" Gb/s per GPU per direction")
	}
	if w.HBMGB > 0 {
		c.Device.Memory = units.Bytes(w.HBMGB * 1e9)
		note("device.memory_bytes", strconv.FormatFloat(w.HBMGB, 'g', -1, 64)+" GB read as 1e9 bytes")
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("what-if %s on %s: %v", w.Name, h.Name, err)
	}
	return &c, nil
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
