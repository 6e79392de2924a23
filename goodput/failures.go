package goodput

import (
	"fmt"
	"math"
	"slices"
)

// Component is a class of failure: what broke.
type Component string

// The components. Node covers the host's own parts (NIC, SSD, power supply, chassis, IO board,
// CPU, system memory) and unplanned host maintenance; Software covers software bugs,
// dependencies and NCCL watchdog timeouts of unknown cause; Planned is planned maintenance.
const (
	GPU      Component = "gpu"
	Node     Component = "node"
	Network  Component = "network"
	Software Component = "software"
	Planned  Component = "planned"
)

// Components lists the components in the order every breakdown prints them.
var Components = []Component{GPU, Node, Network, Software, Planned}

// Cause is one row of the Llama 3 paper's Table 5: a root cause, its component here and its count.
type Cause struct {
	Name      string
	Component Component
	Count     int
}

// Llama3Causes is Table 5 of Dubey et al. 2024, "The Llama 3 Herd of Models" (arXiv:2407.21783),
// Section 3.3.4: the root causes of the 419 unexpected interruptions in a 54-day snapshot of
// Llama 3 405B pre-training on up to 16,384 H100 GPUs (verified against the table as reproduced
// at https://glennklockwood.com/garden/component-reliability and the counts 148, 72, 19, 17, 35
// and 2 CPUs quoted by DatacenterDynamics). The grouping into components is ours; the table's
// own "GPU" category (58.7% in its percentage column) is the six GPU rows below.
var Llama3Causes = []Cause{
	{"faulty GPU", GPU, 148},
	{"GPU HBM3 memory", GPU, 72},
	{"software bug", Software, 54},
	{"network switch/cable", Network, 35},
	{"host maintenance (unplanned)", Node, 32},
	{"GPU SRAM memory", GPU, 19},
	{"GPU system processor", GPU, 17},
	{"NIC", Node, 7},
	{"NCCL watchdog timeouts", Software, 7},
	{"silent data corruption", GPU, 6},
	{"GPU thermal interface + sensor", GPU, 6},
	{"SSD", Node, 3},
	{"power supply", Node, 3},
	{"server chassis", Node, 2},
	{"IO expansion board", Node, 2},
	{"dependency", Software, 2},
	{"CPU", Node, 2},
	{"system memory", Node, 2},
}

// The Llama 3 snapshot (same source, Section 3.3.4): 466 interruptions, 47 planned and 419
// unexpected, in 54 days on up to 16,384 GPUs. We take 16,384 GPUs for the whole 54 days (the
// paper says "up to"), so the rates derived from it are a lower bound if fewer GPUs ran part
// of the time.
const (
	Llama3GPUs        = 16384
	Llama3Days        = 54
	Llama3Planned     = 47
	Llama3Unexpected  = 419
	Llama3Total       = Llama3Planned + Llama3Unexpected
	llama3GPUHours    = float64(Llama3GPUs) * Llama3Days * 24
	Llama3EffectiveTT = 0.90 // "more than 90% effective training time"
)

// Rates are failure rates per GPU-hour, by component. The job's rate is the sum times the GPU
// count: every failure of any component stops a synchronous job. Node and network failures
// scale with the node and link counts, which are proportional to the GPU count at a fixed 8
// GPUs per node, so linear scaling in GPUs is the same thing.
type Rates map[Component]float64

// Llama3Rates are the per-GPU-hour rates derived from Table 5: each component's count divided by
// 16,384 GPUs x 54 days x 24 h = 21,233,664 GPU-hours (419 unexpected: 1.97e-5 per GPU-hour,
// a job MTBF of 3.09 h at 16,384 GPUs). They are fitted to that one run by construction.
func Llama3Rates() Rates {
	r := Rates{Planned: Llama3Planned / llama3GPUHours}
	for _, c := range Llama3Causes {
		r[c.Component] += float64(c.Count) / llama3GPUHours
	}
	return r
}

// Validate reports a rate that is negative, NaN or infinite, or an unknown component.
func (r Rates) Validate() error {
	known := map[Component]bool{}
	for _, c := range Components {
		known[c] = true
	}
	for _, c := range sortedKeys(r) {
		v := r[c]
		if !known[c] {
			return fmt.Errorf("goodput: unknown failure component %q; use one of %v", c, Components)
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("goodput: failure rate of %s is %v per GPU-hour; give a finite rate >= 0", c, v)
		}
	}
	return nil
}

// PerGPUHour is the sum of the rates, optionally without planned interruptions.
func (r Rates) PerGPUHour(withPlanned bool) float64 {
	s := 0.0
	for _, c := range Components {
		if c == Planned && !withPlanned {
			continue
		}
		s += r[c]
	}
	return s
}

func sortedKeys(r Rates) []Component {
	var out []Component
	for _, c := range Components {
		if _, ok := r[c]; ok {
			out = append(out, c)
		}
	}
	var unknown []Component
	for c := range r {
		if !slices.Contains(Components, c) {
			unknown = append(unknown, c)
		}
	}
	slices.Sort(unknown) // map order must not choose which error is reported
	return append(out, unknown...)
}
