package strategies

import (
	"fmt"
	"sort"
	"strings"

	"github.com/tpsim/tpsim/model"
)

// The search space of Enumerate. Every knob the closed-form cost model prices is searched:
//
//	mesh       pp x dp x cp x tp = the device count, every ordered factorisation (pp up to the
//	           layers; stages hold an equal share of layers, or as equal as StageLayers makes them)
//	mbs        the divisors of the global batch
//	zero       0, 1, 2, 3 (0 only when dp = 1)
//	recompute  none, selective, full (transformers)
//	sp         off, on (on only when tp > 1): tensor-parallel activations all-reduced, or
//	           reduce-scattered and all-gathered (Korthikanti et al. 2022 §4.2.2)
//	schedule   1f1b (pp = 1: the only one, a pipeline of one stage has no schedule), and with
//	           pp > 1 interleaved 1F1B with each vpp > 1 that divides the layers per stage (pp
//	           dividing the layers), then GPipe
//	overlap    on, off (data-parallel gradient reduction and ZeRO-3 gathers under compute)
//
// Precision, optimizer and bucket size are not searched: they come from the base strategy (Fix).
// A combination that breaks a rule of Strategy.Validate is rejected and counted under its reason
// (RejectReasons); a combination breaking several is counted under the first in that order.

// Reasons a combination of the search space is rejected, in the order they are checked. The
// strings are keys of Space.Rejected and of `tpsim plan --json`'s "rejected" object.
const (
	RejectHeads       = "tp does not divide heads"
	RejectFFN         = "tp does not divide the MLP width"
	RejectVocab       = "tp does not divide the vocabulary"
	RejectLayers      = "pp exceeds layers"
	RejectSeqCP       = "cp does not divide the sequence"
	RejectNoLayers    = "pp or cp on a model without layers"
	RejectBatch       = "batch not divisible"
	RejectZeroDP      = "zero needs dp > 1"
	RejectZeroPP      = "zero 2-3 with pipeline parallel"
	RejectSPTP        = "sp needs tp > 1"
	RejectSPSeq       = "sequence not divisible by cp x tp (sp)"
	RejectTPOverlapSP = "tpoverlap=full needs sp with tp > 1"
	RejectNotLayered  = "recompute or sp on a model without layers"
	RejectInterPP     = "interleaved needs pp > 1"
	RejectInterLayers = "interleaved needs pp to divide layers"
	RejectVPPSchedule = "vpp needs the interleaved schedule"
	RejectVPP         = "vpp does not divide layers per stage"
	RejectInterMicro  = "interleaved: microbatches not a multiple of pp"
)

// RejectReasons lists the reasons in the order they are checked.
var RejectReasons = []string{RejectHeads, RejectFFN, RejectVocab, RejectLayers, RejectSeqCP, RejectNoLayers, RejectBatch,
	RejectZeroDP, RejectZeroPP, RejectSPTP, RejectSPSeq, RejectTPOverlapSP, RejectNotLayered, RejectInterPP, RejectInterLayers, RejectVPPSchedule, RejectVPP, RejectInterMicro}

// Enumeration order of the recompute modes and schedules (Candidate.Recompute, Candidate.Schedule).
// The search tries the first three; op (torchtitan's per-op checkpointing) only when fixed.
var (
	RecomputeModes = []Recompute{RecomputeNone, RecomputeSelective, RecomputeFull, RecomputeOp}
	Schedules      = []Schedule{Schedule1F1B, ScheduleInterleaved, ScheduleGPipe}
)

// Candidate is one point of the search space, compactly (a search holds millions): the searched
// knobs only; Strategy fills in the rest from the space's base strategy.
type Candidate struct {
	PP, DP, CP, TP int32
	MBS            int32
	VPP            int16
	ZeRO           int8
	Recompute      uint8 // index in RecomputeModes
	Schedule       uint8 // index in Schedules
	SP, Overlap    bool
}

// Strategy returns base with c's knobs set.
func (c Candidate) Strategy(base Strategy) Strategy {
	st := base
	st.Mesh = Mesh{PP: int(c.PP), DP: int(c.DP), CP: int(c.CP), TP: int(c.TP)}
	st.MBS = int(c.MBS)
	st.VPP = int(c.VPP)
	st.ZeRO = int(c.ZeRO)
	st.Recompute = RecomputeModes[c.Recompute]
	st.Schedule = Schedules[c.Schedule]
	st.SP = c.SP
	st.Overlap = c.Overlap
	return st
}

// Fix is a partial strategy for a search: the keys given are fixed, the others searched. Keys
// are those of Parse; precision, optimizer, attn, bucket_mb, tpoverlap, tensorlists, prefetch, fusion,
// compile and kernels are never searched (they are what the user's software stack does, not how the
// run is split), so giving them only changes the base strategy.
type Fix struct {
	// Strategy holds the given values, defaults elsewhere.
	Strategy Strategy
	// Keys are the keys given.
	Keys map[string]bool
}

// Has reports whether key was given.
func (f Fix) Has(key string) bool { return f.Keys[key] }

// String prints the given keys in Parse's form, in a fixed order.
func (f Fix) String() string {
	full := f.Strategy.String()
	var out []string
	for _, part := range strings.Split(full, ",") {
		k, _, _ := strings.Cut(part, "=")
		if f.Keys[k] {
			out = append(out, part)
		}
	}
	return strings.Join(out, ",")
}

// ParseFix reads constraints such as "tp=8,zero=1,recompute=full" with Parse's keys and checks. An
// empty string fixes nothing.
func ParseFix(s string) (Fix, error) {
	f := Fix{Strategy: Default(Mesh{1, 1, 1, 1}), Keys: map[string]bool{}}
	if strings.TrimSpace(s) == "" {
		return f, nil
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, err := splitKV(part)
		if err != nil {
			return f, err
		}
		if isMeshDim(k) {
			if err := setMeshDim(&f.Strategy.Mesh, k, v, seen); err != nil {
				return f, err
			}
		} else {
			if seen[k] {
				return f, fmt.Errorf("strategies: option %q given twice", k)
			}
			seen[k] = true
			if err := f.Strategy.set(k, v); err != nil {
				return f, err
			}
		}
		f.Keys[k] = true
	}
	return f, nil
}

// EnumerateOptions say what to search.
type EnumerateOptions struct {
	// GBS is the global batch in samples and Seq the sequence length; 0 takes the Fix's value if
	// it has one, else the model's.
	GBS, Seq int
	// Fix holds knobs that are not searched.
	Fix Fix
}

// Space is the result of Enumerate: the valid candidates in enumeration order, and the count of
// everything considered.
type Space struct {
	// Base is what every candidate shares: global batch, sequence, precision, optimizer, bucket size.
	Base       Strategy
	Candidates []Candidate
	// Searched is the number of combinations considered: len(Candidates) + the rejected ones.
	Searched int
	// Rejected counts the combinations rejected by the rules of Strategy.Validate, by reason
	// (RejectReasons).
	Rejected map[string]int
}

// Strategy returns candidate i as a full strategy.
func (s *Space) Strategy(i int) Strategy { return s.Candidates[i].Strategy(s.Base) }

// MaxDevices is the most devices Enumerate plans for: 2^20, five times the largest training
// cluster announced (xAI's Colossus at 200,000 H100/H200 GPUs, xAI, 2025). It is checked before
// anything else, and the enumeration's work grows with the number of divisors of the device
// count (divisors lists them by trial division to its square root), never with the count itself.
const MaxDevices = 1 << 20

// Enumerate lists every valid strategy for m on gpus devices in a deterministic order: meshes by
// pp, then tp, then cp ascending (dp takes the rest), then mbs ascending, zero, recompute (none,
// selective, full), sp (off, on), schedule (1f1b, interleaved by vpp, gpipe), overlap (on, off).
// Earlier is simpler, so a search that keeps the first of equal candidates prefers the simpler.
//
// It returns an error for inputs no candidate could fix (gpus < 1, a global batch or sequence
// out of range, a sequence longer than learned positions, a Fix with a mesh that does not
// multiply to gpus); everything else is a rejection, counted, so an empty Space says why.
func Enumerate(m *model.Model, gpus int, o EnumerateOptions) (*Space, error) {
	if gpus < 1 {
		return nil, fmt.Errorf("strategies: %d devices; give at least 1", gpus)
	}
	if gpus > MaxDevices {
		return nil, fmt.Errorf("strategies: %d devices; tpsim plans up to %d (2^20) devices, five times the largest training cluster built (xAI's Colossus, 200,000 GPUs); give --gpus <= %d", gpus, MaxDevices, MaxDevices)
	}
	fix := o.Fix
	if fix.Keys == nil {
		fix.Keys = map[string]bool{}
	}
	base := fix.Strategy
	if base.Precision == "" {
		base = Default(Mesh{1, 1, 1, 1})
	}
	for _, k := range []struct {
		key  string
		opt  *int
		into *int
	}{{"gbs", &o.GBS, &base.GBS}, {"seq", &o.Seq, &base.Seq}} {
		switch {
		case *k.opt < 0:
			return nil, fmt.Errorf("strategies: %s=%d; it must be positive", k.key, *k.opt)
		case *k.opt > 0 && fix.Has(k.key) && *k.into != *k.opt:
			return nil, fmt.Errorf("strategies: %s=%d is fixed, but the search was asked for %s=%d; give one", k.key, *k.into, k.key, *k.opt)
		case *k.opt > 0:
			*k.into = *k.opt
		case !fix.Has(k.key):
			*k.into = 0
		}
	}
	base = base.Resolve(m)
	gbs, seq := base.GBS, base.Seq
	if gbs < 1 {
		return nil, fmt.Errorf("strategies: global batch %d; it must be positive", gbs)
	}
	if gbs > MaxBatch {
		return nil, fmt.Errorf("strategies: global batch %d; tpsim prices batches up to %d samples", gbs, MaxBatch)
	}
	t := m.Transformer
	if t != nil {
		if seq > MaxSeq {
			return nil, fmt.Errorf("strategies: seq=%d is longer than the %d tokens tpsim prices; use seq<=%d", seq, MaxSeq, MaxSeq)
		}
		if t.Learned && seq > t.Seq {
			return nil, fmt.Errorf("strategies: seq=%d is longer than the %d learned positions of %q; use seq<=%d", seq, t.Seq, m.Name, t.Seq)
		}
		if err := windowFits(m, seq); err != nil {
			return nil, err
		}
	}
	fm := fix.Strategy.Mesh
	fixedDevices := 1
	for _, d := range DimOrder {
		if fix.Has(string(d)) {
			fixedDevices *= fm.Size(d)
		}
	}
	if gpus%fixedDevices != 0 {
		return nil, fmt.Errorf("strategies: the fixed mesh dimensions multiply to %d, which does not divide %d devices; fix dimensions whose product divides %d", fixedDevices, gpus, gpus)
	}

	e := enumerator{m: m, t: t, fix: fix, gbs: gbs, seq: seq, space: &Space{Base: base, Rejected: map[string]int{}}}
	e.mbsDomain = e.domain("mbs", divisors(gbs))
	e.run(gpus)
	return e.space, nil
}

type enumerator struct {
	m         *model.Model
	t         *model.Transformer
	fix       Fix
	gbs, seq  int
	mbsDomain []int
	space     *Space
}

// domain returns the values of key to search: the fixed one, or all.
func (e *enumerator) domain(key string, all []int) []int {
	if !e.fix.Has(key) {
		return all
	}
	var v int
	st := e.fix.Strategy
	switch Dim(key) {
	case DimPP:
		v = st.Mesh.PP
	case DimDP:
		v = st.Mesh.DP
	case DimCP:
		v = st.Mesh.CP
	case DimTP:
		v = st.Mesh.TP
	case "mbs":
		v = st.MBS
	case "vpp":
		v = st.VPP
	case "zero":
		v = st.ZeRO
	}
	return []int{v}
}

func (e *enumerator) reject(reason string, n int) {
	if n > 0 {
		e.space.Rejected[reason] += n
		e.space.Searched += n
	}
}

// options are the values of the knobs below the mesh and mbs for one mesh.
type options struct {
	zero      []int
	recompute []uint8
	sp        []bool
	schedules []sched
	overlap   []bool
}

type sched struct {
	kind uint8 // index in Schedules
	vpp  int
}

func (o *options) count() int {
	return len(o.zero) * len(o.recompute) * len(o.sp) * len(o.schedules) * len(o.overlap)
}

func (e *enumerator) boolDomain(key string, all []bool) []bool {
	if !e.fix.Has(key) {
		return all
	}
	if key == "sp" {
		return []bool{e.fix.Strategy.SP}
	}
	return []bool{e.fix.Strategy.Overlap}
}

// options returns the knob values to search for a mesh.
func (e *enumerator) options(ms Mesh) options {
	var o options
	zeros := []int{0}
	if ms.DP > 1 {
		zeros = []int{0, 1, 2, 3}
	}
	o.zero = e.domain("zero", zeros)
	o.recompute = []uint8{0}
	sps := []bool{false}
	if e.t != nil {
		o.recompute = []uint8{0, 1, 2}
		if e.fix.Strategy.FusedAttention() {
			// Selective recompute recomputes the attention core, which FlashAttention already
			// recomputes inside its backward: it is recompute=none again, so not searched.
			o.recompute = []uint8{0, 2}
		}
		if ms.TP > 1 {
			sps = []bool{false, true}
		}
	}
	if e.fix.Has("recompute") {
		for i, r := range RecomputeModes {
			if r == e.fix.Strategy.Recompute {
				o.recompute = []uint8{uint8(i)}
			}
		}
	}
	o.sp = e.boolDomain("sp", sps)
	o.overlap = e.boolDomain("overlap", []bool{true, false})

	// Schedules: 1f1b alone without a pipeline; with one, 1f1b, interleaved by vpp, gpipe.
	var all []sched
	if ms.PP == 1 {
		all = []sched{{0, 1}}
	} else {
		all = append(all, sched{0, 1})
		if e.t != nil && e.t.Layers%ms.PP == 0 {
			for _, v := range divisors(e.t.Layers / ms.PP) {
				if v > 1 {
					all = append(all, sched{1, v})
				}
			}
		}
		all = append(all, sched{2, 1})
	}
	fs, fv := e.fix.Has("schedule"), e.fix.Has("vpp")
	if !fs && !fv {
		o.schedules = all
		return o
	}
	kind := -1
	if fs {
		for i, s := range Schedules {
			if s == e.fix.Strategy.Schedule {
				kind = i
			}
		}
	}
	switch {
	case fv && e.fix.Strategy.VPP > 1 && kind < 0:
		kind = 1 // vpp > 1 implies interleaving
	case fv && kind < 0:
		kind = -2 // vpp = 1: every non-interleaved schedule
	}
	for _, s := range all {
		if (kind >= 0 && int(s.kind) != kind) || (kind == -2 && s.kind == 1) {
			continue
		}
		if fv && s.vpp != e.fix.Strategy.VPP {
			continue
		}
		o.schedules = append(o.schedules, s)
	}
	if len(o.schedules) == 0 {
		// The fixed schedule or vpp is not in the space for this mesh; keep it so that it is
		// counted under the rule it breaks.
		v := 1
		if fv {
			v = e.fix.Strategy.VPP
		}
		if kind < 0 {
			kind = 0
			if v > 1 {
				kind = 1
			}
		}
		o.schedules = []sched{{uint8(kind), v}}
	}
	return o
}

func (e *enumerator) run(gpus int) {
	divs := divisors(gpus)
	for _, pp := range e.domain(string(DimPP), divs) {
		if gpus%pp != 0 {
			continue
		}
		for _, tp := range e.domain(string(DimTP), divisors(gpus/pp)) {
			if (gpus/pp)%tp != 0 {
				continue
			}
			for _, cp := range e.domain(string(DimCP), divisors(gpus/pp/tp)) {
				if (gpus/pp/tp)%cp != 0 {
					continue
				}
				dp := gpus / pp / tp / cp
				if e.fix.Has(string(DimDP)) && dp != e.fix.Strategy.Mesh.DP {
					continue
				}
				e.mesh(Mesh{PP: pp, DP: dp, CP: cp, TP: tp})
			}
		}
	}
}

// meshReason returns why a mesh is invalid for the model, "" if it is valid.
func (e *enumerator) meshReason(ms Mesh) string {
	t := e.t
	if t == nil {
		if ms.PP > 1 || ms.CP > 1 {
			return RejectNoLayers
		}
		return ""
	}
	switch {
	case t.Heads%ms.TP != 0 || t.KVHeads%ms.TP != 0:
		return RejectHeads
	case t.FFN%ms.TP != 0:
		return RejectFFN
	case t.Vocab%ms.TP != 0:
		return RejectVocab
	case t.Layers < ms.PP:
		return RejectLayers
	case e.seq%ms.CP != 0:
		return RejectSeqCP
	}
	return ""
}

func (e *enumerator) mesh(ms Mesh) {
	o := e.options(ms)
	per := o.count()
	if r := e.meshReason(ms); r != "" {
		e.reject(r, per*len(e.mbsDomain))
		return
	}
	for _, mbs := range e.mbsDomain {
		if e.gbs%(ms.DP*mbs) != 0 {
			e.reject(RejectBatch, per)
			continue
		}
		micro := e.gbs / (ms.DP * mbs)
		for _, z := range o.zero {
			rest := len(o.recompute) * len(o.sp) * len(o.schedules) * len(o.overlap)
			switch {
			case z > 0 && ms.DP == 1:
				e.reject(RejectZeroDP, rest)
				continue
			case z >= 2 && ms.PP > 1:
				e.reject(RejectZeroPP, rest)
				continue
			}
			for _, rc := range o.recompute {
				for _, sp := range o.sp {
					n := len(o.schedules) * len(o.overlap)
					switch {
					case sp && ms.TP == 1:
						e.reject(RejectSPTP, n)
						continue
					case e.t == nil && (sp || rc != 0):
						e.reject(RejectNotLayered, n)
						continue
					case sp && (e.seq/ms.CP)%ms.TP != 0:
						e.reject(RejectSPSeq, n)
						continue
					case !sp && ms.TP > 1 && e.fix.Strategy.TPOverlapForward:
						e.reject(RejectTPOverlapSP, n)
						continue
					}
					for _, s := range o.schedules {
						n := len(o.overlap)
						if s.kind == 1 {
							switch {
							case ms.PP == 1:
								e.reject(RejectInterPP, n)
								continue
							case e.t != nil && e.t.Layers%ms.PP != 0:
								e.reject(RejectInterLayers, n)
								continue
							case e.t != nil && (e.t.Layers/ms.PP)%s.vpp != 0:
								e.reject(RejectVPP, n)
								continue
							case micro%ms.PP != 0:
								e.reject(RejectInterMicro, n)
								continue
							}
						} else if s.vpp != 1 {
							e.reject(RejectVPPSchedule, n)
							continue
						}
						for _, ov := range o.overlap {
							e.space.Candidates = append(e.space.Candidates, Candidate{
								PP: int32(ms.PP), DP: int32(ms.DP), CP: int32(ms.CP), TP: int32(ms.TP), MBS: int32(mbs),
								VPP: int16(s.vpp), ZeRO: int8(z), Recompute: rc, Schedule: s.kind, SP: sp, Overlap: ov})
							e.space.Searched++
						}
					}
				}
			}
		}
	}
}

// SortedReasons returns the keys of a rejection count in the order of RejectReasons, other keys
// after them in lexical order.
func SortedReasons(rejected map[string]int) []string {
	rank := map[string]int{}
	for i, r := range RejectReasons {
		rank[r] = i
	}
	keys := make([]string, 0, len(rejected))
	for k := range rejected {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		ri, oki := rank[keys[i]]
		rj, okj := rank[keys[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return keys[i] < keys[j]
	})
	return keys
}
