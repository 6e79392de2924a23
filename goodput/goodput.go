package goodput

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/tpsim/tpsim/units"
)

// Defaults, each with its source or marked as an assumption.
const (
	// DefaultGPUsPerNode: 8 GPUs per server (the Llama 3 paper's Grand Teton servers, Section 3.3.1;
	// also DGX H100).
	DefaultGPUsPerNode = 8
	// DefaultCheckpointBytesPerParam: a checkpoint holds the 16-bit weights (2 bytes) and the mixed
	// precision Adam state, fp32 master weights, momentum and variance (4+4+4 bytes): 14 bytes per
	// parameter. Rajbhandari et al. 2020 (ZeRO, Section 3.1) count 16 with the 2 bytes of fp16
	// gradients, which a checkpoint does not need.
	DefaultCheckpointBytesPerParam = 14
	// DefaultStorageBandwidthPerNode: the Llama 3 paper's Tectonic storage sustains 2 TB/s
	// (Section 3.3.1) for 16,384 GPUs = 2,048 nodes, about 0.98 GB/s per node; rounded to 1 GB/s.
	DefaultStorageBandwidthPerNode units.BytesPerSecond = 1e9
	// DefaultD2HBandwidth: the device-to-host copy of an asynchronous checkpoint, per GPU.
	// ASSUMPTION: 50 GB/s, 78% of PCIe 5.0 x16's nominal 64 GB/s per direction (PCI-SIG).
	DefaultD2HBandwidth units.BytesPerSecond = 50e9
	// DefaultDetection: time from a failure to the job noticing it. PyTorch's default collective
	// timeout for NCCL is 10 minutes (torch.distributed.init_process_group, "timeout"); a job whose
	// failures are caught sooner by health checks loses less. The default is that timeout.
	DefaultDetection units.Seconds = 600
	// DefaultRestart: rescheduling the job and re-initialising it (process groups, data loader),
	// not counting the checkpoint read. ASSUMPTION: 5 minutes; the Llama 3 paper says Meta reduced
	// job start-up time but gives no figure.
	DefaultRestart units.Seconds = 300
	// DefaultReplacement: without hot spares, the time to drain and replace the failed hardware
	// before the job can restart (GPU, node and network failures only; a software failure restarts
	// on the same hardware). ASSUMPTION: 1 hour.
	DefaultReplacement units.Seconds = 3600
)

// Config is one training to account for. Zero fields take the defaults above where one exists
// (Defaults fills them); GPUs, StepTime, Steps and Params have none.
type Config struct {
	GPUs        int
	GPUsPerNode int
	// StepTime is the mean rank's step time, before stragglers.
	StepTime units.Seconds
	Steps    int
	// JitterCV is the coefficient of variation of each rank's step time (normal, independent across
	// ranks and steps); 0: no stragglers.
	JitterCV float64
	// Rates are failure rates per GPU-hour; nil: Llama3Rates().
	Rates Rates

	Params                  float64 // model parameters, for the checkpoint size
	CheckpointBytesPerParam float64
	StorageBandwidthPerNode units.BytesPerSecond
	// Async: checkpoints are copied to host memory (the step pays the copy) and written in the
	// background; the interval is then at least the background write.
	Async        bool
	D2HBandwidth units.BytesPerSecond
	// CheckpointInterval is the compute time between checkpoints; 0: the Young/Daly optimum.
	CheckpointInterval units.Seconds

	Detection   units.Seconds
	Restart     units.Seconds
	HotSpares   bool
	Replacement units.Seconds
}

// Defaults returns c with its zero optional fields set to the package defaults.
func (c Config) Defaults() Config {
	if c.GPUsPerNode == 0 {
		c.GPUsPerNode = DefaultGPUsPerNode
	}
	if c.Rates == nil {
		c.Rates = Llama3Rates()
	}
	if c.CheckpointBytesPerParam == 0 {
		c.CheckpointBytesPerParam = DefaultCheckpointBytesPerParam
	}
	if c.StorageBandwidthPerNode == 0 {
		c.StorageBandwidthPerNode = DefaultStorageBandwidthPerNode
	}
	if c.D2HBandwidth == 0 {
		c.D2HBandwidth = DefaultD2HBandwidth
	}
	if c.Detection == 0 {
		c.Detection = DefaultDetection
	}
	if c.Restart == 0 {
		c.Restart = DefaultRestart
	}
	if c.Replacement == 0 {
		c.Replacement = DefaultReplacement
	}
	return c
}

func positive(name string, v float64, fix string) error {
	if !(v > 0) || math.IsInf(v, 0) {
		return fmt.Errorf("goodput: %s is %v; %s", name, v, fix)
	}
	return nil
}

// Validate reports the first bad field of a defaulted Config.
func (c Config) Validate() error {
	if c.GPUs < 1 {
		return fmt.Errorf("goodput: %d GPUs; give at least 1", c.GPUs)
	}
	if c.GPUsPerNode < 1 {
		return fmt.Errorf("goodput: %d GPUs per node; give at least 1", c.GPUsPerNode)
	}
	if c.Steps < 1 {
		return fmt.Errorf("goodput: %d steps; give at least 1", c.Steps)
	}
	if err := checkJitter(c.GPUs, c.JitterCV); err != nil {
		return err
	}
	for _, p := range []struct {
		name string
		v    float64
		fix  string
	}{
		{"the step time", float64(c.StepTime), "give the mean step time in seconds, > 0"},
		{"the parameter count", c.Params, "give the model's parameters, > 0"},
		{"the checkpoint bytes per parameter", c.CheckpointBytesPerParam, "give e.g. 14 (bf16 weights + fp32 Adam state)"},
		{"the storage bandwidth per node", float64(c.StorageBandwidthPerNode), "give bytes/s, > 0"},
		{"the device-to-host bandwidth", float64(c.D2HBandwidth), "give bytes/s, > 0"},
	} {
		if err := positive(p.name, p.v, p.fix); err != nil {
			return err
		}
	}
	for _, p := range []struct {
		name string
		v    units.Seconds
	}{{"the checkpoint interval", c.CheckpointInterval}, {"the detection time", c.Detection}, {"the restart time", c.Restart}, {"the replacement time", c.Replacement}} {
		if p.v < 0 || math.IsNaN(float64(p.v)) || math.IsInf(float64(p.v), 0) {
			return fmt.Errorf("goodput: %s is %v; give a finite duration >= 0", p.name, float64(p.v))
		}
	}
	return c.Rates.Validate()
}

// Checkpoint is the cost of one checkpoint.
type Checkpoint struct {
	Bytes units.Bytes   // whole-model checkpoint
	Write units.Seconds // all nodes writing their shards in parallel to storage
	Read  units.Seconds // reading it back after a failure (same bandwidth)
	Stall units.Seconds // what the training pays per checkpoint: Write, or the D2H copy if async
}

// CheckpointCost is the checkpoint of c: Bytes = Params x bytes/param; each of the GPUs/GPUsPerNode
// nodes writes its 1/nodes share at the per-node storage bandwidth (storage assumed to scale with
// the nodes); an async checkpoint stalls for each GPU's 1/GPUs share over the D2H bandwidth
// (the state assumed sharded over all GPUs).
func CheckpointCost(c Config) Checkpoint {
	b := c.Params * c.CheckpointBytesPerParam
	nodes := math.Ceil(float64(c.GPUs) / float64(c.GPUsPerNode))
	w := units.Seconds(b / nodes / float64(c.StorageBandwidthPerNode))
	ck := Checkpoint{Bytes: units.Bytes(b), Write: w, Read: w, Stall: w}
	if c.Async {
		ck.Stall = units.Seconds(b / float64(c.GPUs) / float64(c.D2HBandwidth))
	}
	return ck
}

// YoungDaly is the checkpoint interval that minimises the expected loss to first order:
// sqrt(2 C M) for a checkpoint cost C and a mean time between failures M (Young 1974, "A first
// order approximation to the optimum checkpoint interval", CACM 17(9); Daly 2006, FGCS 22(3),
// whose higher-order refinement sqrt(2CM) - C differs by C, negligible here).
func YoungDaly(cost, mtbf units.Seconds) units.Seconds {
	return units.Seconds(math.Sqrt(2 * float64(cost) * float64(mtbf)))
}

// Result is a training's time, split.
type Result struct {
	Wall        units.Seconds // from start to the last step
	Useful      units.Seconds // Steps x StepTime: the training without any loss
	Stragglers  units.Seconds // steps' extra time waiting for the slowest rank
	Checkpoints units.Seconds // checkpoint stalls, including those before planned interruptions
	Recompute   units.Seconds // work lost since the last checkpoint, done again
	Restarts    units.Seconds // detection, replacement, restart and checkpoint read
	// Goodput = Useful / Wall.
	Goodput float64
	// EffectiveTrainingTime = (Wall - Recompute - Restarts) / Wall: the share of the time the job
	// trains (checkpoints and stragglers included), as the Llama 3 paper's "effective training time"
	// is read here (the paper does not define it further).
	EffectiveTrainingTime float64
	// Interruptions by component: expected (closed form) or counted (simulation).
	Interruptions map[Component]float64
	Checkpoint    Checkpoint
	MTBF          units.Seconds // of the job, unexpected failures only
	Interval      units.Seconds // compute time between checkpoints, IntervalSteps steps
	IntervalSteps int
	StepTime      units.Seconds // the expected synchronous step, stragglers included
}

// TotalInterruptions sums r.Interruptions.
func (r Result) TotalInterruptions() float64 {
	s := 0.0
	for _, c := range Components {
		s += r.Interruptions[c]
	}
	return s
}

type plan struct {
	c                 Config
	ck                Checkpoint
	step              units.Seconds
	k                 int
	lu, lp            float64 // unexpected and planned interruptions per second
	hwShare           float64 // share of unexpected ones that are hardware (GPU, node, network)
	restartUnexpected units.Seconds
	restartPlanned    units.Seconds
	mtbf              units.Seconds
}

func newPlan(c Config) (plan, error) {
	c = c.Defaults()
	if err := c.Validate(); err != nil {
		return plan{}, err
	}
	p := plan{c: c, ck: CheckpointCost(c)}
	p.step = c.StepTime * units.Seconds(StragglerFactor(c.GPUs, c.JitterCV))
	n := float64(c.GPUs)
	p.lu = c.Rates.PerGPUHour(false) * n / 3600
	p.lp = c.Rates[Planned] * n / 3600
	if p.lu > 0 {
		p.hwShare = (c.Rates[GPU] + c.Rates[Node] + c.Rates[Network]) * n / 3600 / p.lu
		p.mtbf = units.Seconds(1 / p.lu)
	} else {
		p.mtbf = units.Seconds(math.Inf(1))
	}
	interval := c.CheckpointInterval
	if interval == 0 {
		if p.lu == 0 {
			interval = p.step * units.Seconds(c.Steps) // no failures: one checkpoint at the end
		} else {
			interval = YoungDaly(p.ck.Stall, p.mtbf)
		}
	}
	if c.Async && interval < p.ck.Write {
		interval = p.ck.Write // the background write must finish before the next checkpoint
	}
	p.k = max(1, int(math.Round(float64(interval/p.step))))
	p.k = min(p.k, c.Steps)
	p.restartUnexpected = c.Detection + c.Restart + p.ck.Read
	if !c.HotSpares {
		p.restartUnexpected += units.Seconds(p.hwShare) * c.Replacement
	}
	p.restartPlanned = c.Restart + p.ck.Read
	// Refused when a failure arrives, on average, before an interval completes a tenth of the
	// time or more (λu L >= 0.5): the closed form's first-order accounting no longer holds and
	// the simulation would take unboundedly long.
	if l := p.lossPerFailure(); p.lu*l >= 0.5 {
		return plan{}, fmt.Errorf("goodput: a failure every %v on average but %v lost per failure: the training barely progresses; checkpoint more often (--checkpoint-interval) or lower the failure rate", p.mtbf, units.Seconds(l))
	}
	return p, nil
}

// lossPerFailure is the mean work lost to an unexpected failure, (k t + C) / 2.
func (p plan) lossPerFailure() float64 {
	return (float64(p.k)*float64(p.step) + float64(p.ck.Stall)) / 2
}

func (p plan) result() Result {
	return Result{
		Interruptions: map[Component]float64{},
		Checkpoint:    p.ck,
		MTBF:          p.mtbf,
		Interval:      p.step * units.Seconds(p.k),
		IntervalSteps: p.k,
		StepTime:      p.step,
		Useful:        p.c.StepTime * units.Seconds(p.c.Steps),
		Stragglers:    (p.step - p.c.StepTime) * units.Seconds(p.c.Steps),
	}
}

func (r *Result) finish() {
	r.Wall = r.Useful + r.Stragglers + r.Checkpoints + r.Recompute + r.Restarts
	r.Goodput = float64(r.Useful / r.Wall)
	r.EffectiveTrainingTime = float64((r.Wall - r.Recompute - r.Restarts) / r.Wall)
}

// ClosedForm is the expected time of the training c. A checkpoint is taken every k steps
// (k = interval / step, rounded), floor(S/k) of them. Unexpected failures arrive at rate
// λu = GPUs x rate/3600 per second of running time (steps, checkpoints, recomputation; not during
// restarts) and each loses the time since the last checkpoint ended, L = (k t + C)/2 on average,
// so the running time is A = A0 / (1 - λu L) with A0 = S t + floor(S/k) C, and the failures
// λu A. Each costs detection + restart + checkpoint read (+ replacement of hardware without hot
// spares); a planned interruption (rate λp) checkpoints first, losing C + restart + read, no work.
func ClosedForm(c Config) (Result, error) {
	p, err := newPlan(c)
	if err != nil {
		return Result{}, err
	}
	r := p.result()
	s := float64(p.c.Steps)
	nck := math.Floor(s / float64(p.k))
	a0 := s*float64(p.step) + nck*float64(p.ck.Stall)
	l := p.lossPerFailure()
	a := a0 / (1 - p.lu*l)
	nu, np := p.lu*a, p.lp*a
	for _, comp := range Components {
		if comp != Planned {
			r.Interruptions[comp] = p.c.Rates[comp] * float64(p.c.GPUs) / 3600 * a
		}
	}
	r.Interruptions[Planned] = np
	r.Checkpoints = units.Seconds(nck*float64(p.ck.Stall) + np*float64(p.ck.Stall))
	r.Recompute = units.Seconds(nu * l)
	r.Restarts = units.Seconds(nu*float64(p.restartUnexpected) + np*float64(p.restartPlanned))
	r.finish()
	return r, nil
}

// Simulate runs the training c as a seeded event simulation: every step's synchronous time is
// the mean step times 1 + cv M, M the maximum of GPUs standard normals drawn exactly
// (sampleMaxNormal); interruptions arrive with exponential inter-arrival times at the total
// rate over running time, each of a component drawn in proportion to its rate. An unexpected
// one rolls progress back to the last checkpoint; a planned one checkpoints first. The same
// seed gives the same result.
func Simulate(c Config, seed uint64) (Result, error) {
	p, err := newPlan(c)
	if err != nil {
		return Result{}, err
	}
	r := p.result()
	r.Stragglers = 0
	rng := rand.New(rand.NewPCG(seed, 0x6a09e667f3bcc909))
	lam := p.lu + p.lp
	nextFail := math.Inf(1)
	draw := func(now float64) {
		if lam > 0 {
			nextFail = now + rng.ExpFloat64()/lam
		}
	}
	pick := func() Component {
		u := rng.Float64() * lam
		for _, comp := range Components {
			u -= p.c.Rates[comp] * float64(p.c.GPUs) / 3600
			if u < 0 {
				return comp
			}
		}
		return Software // rounding at the end of the range
	}
	stepT, cv, n := float64(p.c.StepTime), p.c.JitterCV, p.c.GPUs
	stall := float64(p.ck.Stall)
	var t float64 // running time: steps, checkpoints, recomputation (restarts kept apart)
	var restarts, ckpts, recompute, straggle float64
	done := 0
	draw(0)
	for done < p.c.Steps {
		k := min(p.k, p.c.Steps-done)
		seg, extra := 0.0, 0.0
		for i := 0; i < k; i++ {
			d := stepT
			if cv > 0 {
				d = stepT * (1 + cv*sampleMaxNormal(rng, n))
			}
			seg += d
			extra += d - stepT
		}
		withCkpt := seg
		if k == p.k { // a full interval ends with a checkpoint
			withCkpt += stall
		}
		if t+withCkpt <= nextFail {
			t += withCkpt
			done += k
			straggle += extra
			if k == p.k {
				ckpts += stall
			}
			continue
		}
		// An interruption during this segment.
		lost := nextFail - t
		t = nextFail
		comp := pick()
		r.Interruptions[comp]++
		if comp == Planned {
			// Planned: the job checkpoints where it stands, then restarts; no work is lost. The
			// steps done before it are kept (counted as whole steps; the partial one is redone).
			frac := lost / seg
			kept := min(k, int(frac*float64(k)))
			done += kept
			straggle += extra * float64(kept) / float64(k)
			recompute += lost - seg*float64(kept)/float64(k)
			ckpts += stall
			t += stall
			restarts += float64(p.restartPlanned)
		} else {
			recompute += lost
			restarts += float64(p.c.Detection + p.c.Restart + p.ck.Read)
			if !p.c.HotSpares && comp != Software {
				restarts += float64(p.c.Replacement)
			}
		}
		draw(t)
	}
	r.Stragglers = units.Seconds(straggle)
	r.Checkpoints = units.Seconds(ckpts)
	r.Recompute = units.Seconds(recompute)
	r.Restarts = units.Seconds(restarts)
	r.finish()
	return r, nil
}
