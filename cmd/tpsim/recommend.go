package main

import (
	"fmt"
	"strings"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/units"
)

// recommendation is the choice for one objective and its reasons, in numbers.
type recommendation struct {
	Objective string `json:"objective"`
	Choice    string `json:"choice"`
	Reason    string `json:"reason"`
}

func sentBytes(r resultRow) float64 {
	var n float64
	for _, v := range r.Measured.CommBytes {
		n += v
	}
	return n
}

// recommend picks, from the measured rows, the strategy for each objective of the classic
// guidance: speed, memory per device, communication; and says why with the numbers, beside the
// model's size against the hardware's memory and cores.
func recommend(res *compareResults, hw *hardware.Hardware) []recommendation {
	rows := res.Rows
	best := func(less func(a, b resultRow) bool, ok func(resultRow) bool) (int, int) {
		first, second := -1, -1
		for i, r := range rows {
			if !ok(r) {
				continue
			}
			switch {
			case first < 0 || less(r, rows[first]):
				first, second = i, first
			case second < 0 || less(r, rows[second]):
				second = i
			}
		}
		return first, second
	}
	all := func(resultRow) bool { return true }
	step := func(r resultRow) float64 { return r.Measured.Time.Step }
	peak := func(r resultRow) float64 { return r.Measured.Memory["peak"] }
	name := func(r resultRow) string { return r.Label() }
	ms := func(s float64) string { return units.Seconds(s).String() }
	b := func(x float64) string { return units.Bytes(x).String() }

	var out []recommendation
	t1, t2 := best(func(a, c resultRow) bool { return step(a) < step(c) }, all)
	if t1 >= 0 {
		r := rows[t1]
		reason := fmt.Sprintf("Measured %s per step", ms(step(r)))
		if t2 >= 0 {
			o := rows[t2]
			if x := step(o) / step(r); x >= 1.05 {
				reason += fmt.Sprintf(", %.2fx faster than the runner-up %s (%s)", x, name(o), ms(step(o)))
			} else {
				reason += fmt.Sprintf(", within 5%% of the runner-up %s (%s)", name(o), ms(step(o)))
			}
		}
		reason += fmt.Sprintf("; it sends %s per rank per step and holds %s of parameters per rank (predicted step %s).",
			b(sentBytes(r)), b(r.Measured.Memory["params"]), ms(r.Predicted.Time.Step))
		for _, o := range rows {
			if o.Ranks == 1 && r.Ranks > 1 {
				reason += fmt.Sprintf(" Against one device (%s) its speed-up is %.2fx.", ms(step(o)), step(o)/step(r))
				break
			}
		}
		if hw.Cores > 0 {
			reason += fmt.Sprintf(" The ranks share this machine's %d cores: past %d ranks they only time-share them, so more ranks add communication and waiting at collectives without adding compute; on devices of their own the ranking would follow the compute each rank keeps and the bytes it sends.", hw.Cores, hw.Cores)
		}
		out = append(out, recommendation{"time", name(r), reason})
	}
	m1, _ := best(func(a, c resultRow) bool { return peak(a) < peak(c) || peak(a) == peak(c) && step(a) < step(c) }, all)
	if m1 >= 0 {
		r := rows[m1]
		reason := fmt.Sprintf("Peak %s per rank (params %s, grads %s, optimizer %s, activations %s)", b(peak(r)),
			b(r.Measured.Memory["params"]), b(r.Measured.Memory["grads"]), b(r.Measured.Memory["optimizer"]), b(r.Measured.Memory["activations"]))
		if t1 >= 0 && t1 != m1 {
			f := rows[t1]
			reason += fmt.Sprintf(", %.2fx less than the fastest, %s (%s); it pays %.2fx the step time (%s against %s) and sends %s per rank per step against %s",
				peak(f)/peak(r), name(f), b(peak(f)), step(r)/step(f), ms(step(r)), ms(step(f)), b(sentBytes(r)), b(sentBytes(f)))
		}
		state := float64(res.Params) * 4 * 2 // fp32 params and grads
		if res.Optimizer == "adam" {
			state += float64(res.Params) * 8
		}
		if state <= float64(hw.Device.Memory) {
			reason += fmt.Sprintf(". The model's parameters, gradients and optimizer state take %s per copy and a device here has %s, so plain data parallel fits; shard (tp, ZeRO) when a copy does not fit.", b(state), b(float64(hw.Device.Memory)))
		} else {
			reason += fmt.Sprintf(". The model's parameters, gradients and optimizer state take %s per copy, more than the %s of a device here: plain data parallel does not fit, shard them (tp, ZeRO).", b(state), b(float64(hw.Device.Memory)))
		}
		out = append(out, recommendation{"memory", name(r), reason})
	}
	multi := func(r resultRow) bool { return r.Ranks > 1 }
	c1, c2 := best(func(a, c resultRow) bool {
		return sentBytes(a) < sentBytes(c) || sentBytes(a) == sentBytes(c) && step(a) < step(c)
	}, multi)
	if c1 >= 0 {
		r := rows[c1]
		reason := fmt.Sprintf("Sends %s per rank per step", b(sentBytes(r)))
		var dims []string
		for _, d := range []string{"dp", "tp"} {
			if v := r.Measured.CommBytes[d]; v > 0 {
				dims = append(dims, fmt.Sprintf("%s on %s", b(v), d))
			}
		}
		if len(dims) > 0 {
			reason += " (" + strings.Join(dims, ", ") + ")"
		}
		if c2 >= 0 {
			o := rows[c2]
			if sentBytes(r) > 0 {
				reason += fmt.Sprintf(", %.2fx less than the next, %s (%s)", sentBytes(o)/sentBytes(r), name(o), b(sentBytes(o)))
			} else {
				reason += fmt.Sprintf(", against %s for the next, %s", b(sentBytes(o)), name(o))
			}
		}
		reason += fmt.Sprintf("; its step takes %s. Data parallel sends every gradient each step, tensor parallel sends activations every layer: which is less depends on batch x sequence against the parameter count.", ms(step(r)))
		out = append(out, recommendation{"communication", name(r), reason})
	}
	return out
}
