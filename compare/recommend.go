package compare

import (
	"fmt"
	"strings"

	"github.com/tpsim/tpsim/hardware"
	"github.com/tpsim/tpsim/units"
)

func sentBytes(r Row) float64 {
	var n float64
	for _, v := range r.Measured.CommBytes {
		n += v
	}
	return n
}

func ms(s float64) string   { return units.Seconds(s).String() }
func bstr(x float64) string { return units.Bytes(x).String() }

// spreadText is "22.9 ms to 24.1 ms over 3 rounds".
func spreadText(r Row) string {
	if r.Rounds >= 2 {
		return fmt.Sprintf("%s to %s over %d rounds", ms(r.Spread.Low), ms(r.Spread.High), r.Rounds)
	}
	return fmt.Sprintf("%s to %s between its steps' quartiles", ms(r.Spread.Low), ms(r.Spread.High))
}

// Recommend picks, from the measured rows, the strategy for each objective of the classic
// guidance: speed, memory per device, communication; and says why with the numbers, beside the
// model's size against the hardware's memory and cores. For speed, rows whose measured step is
// within the spread of the fastest (their ranges over rounds overlap) tie with it: the
// measurement cannot tell them apart, and the recommendation says so instead of calling one
// faster.
func Recommend(res *Results, hw *hardware.Hardware) []Recommendation {
	rows := res.Rows
	best := func(less func(a, b Row) bool, ok func(Row) bool) (int, int) {
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
	all := func(Row) bool { return true }
	step := func(r Row) float64 { return r.Measured.Time.Step }
	peak := func(r Row) float64 { return r.Measured.Memory["peak"] }

	var out []Recommendation
	t1, t2 := best(func(a, c Row) bool { return step(a) < step(c) }, all)
	if t1 >= 0 {
		r := rows[t1]
		rec := Recommendation{Objective: "time", Choice: r.Label()}
		var tied []Row
		for i, o := range rows {
			if i != t1 && o.Spread.Overlaps(r.Spread) {
				tied = append(tied, o)
				rec.Tied = append(rec.Tied, o.Label())
			}
		}
		reason := fmt.Sprintf("measured %s per step (%s)", ms(step(r)), spreadText(r))
		switch {
		case len(tied) > 0:
			var parts []string
			for _, o := range tied {
				parts = append(parts, fmt.Sprintf("%s %s (%s)", o.Label(), ms(step(o)), spreadText(o)))
			}
			reason = fmt.Sprintf("A tie: %s is fastest by its median, but %s overlap its range, so the measurement cannot rank them; it %s", r.Label(),
				strings.Join(parts, ", "), reason)
		case t2 >= 0:
			reason = "M" + reason[1:]
			o := rows[t2]
			reason += fmt.Sprintf(", %.2fx faster than the runner-up %s (%s, %s): outside the spread of both", step(o)/step(r), o.Label(), ms(step(o)), spreadText(o))
		}
		reason += fmt.Sprintf("; it sends %s per rank per step and holds %s of parameters per rank (predicted step %s).",
			bstr(sentBytes(r)), bstr(r.Measured.Memory["params"]), ms(r.Predicted.Time.Step))
		for _, o := range rows {
			if o.Ranks == 1 && r.Ranks > 1 {
				reason += fmt.Sprintf(" Against one device (%s) its speed-up is %.2fx.", ms(step(o)), step(o)/step(r))
				break
			}
		}
		if hw.Cores > 0 {
			reason += fmt.Sprintf(" The ranks share this machine's %d cores: past %d ranks they only time-share them, so more ranks add communication and waiting at collectives without adding compute; on devices of their own the ranking would follow the compute each rank keeps and the bytes it sends.", hw.Cores, hw.Cores)
		}
		rec.Reason = reason
		if len(rec.Tied) > 0 {
			rec.Choice = "tie: " + strings.Join(append([]string{r.Label()}, rec.Tied...), ", ")
		}
		out = append(out, rec)
	}
	m1, _ := best(func(a, c Row) bool { return peak(a) < peak(c) || peak(a) == peak(c) && step(a) < step(c) }, all)
	if m1 >= 0 {
		r := rows[m1]
		reason := fmt.Sprintf("Peak %s per rank (params %s, grads %s, optimizer %s, activations %s)", bstr(peak(r)),
			bstr(r.Measured.Memory["params"]), bstr(r.Measured.Memory["grads"]), bstr(r.Measured.Memory["optimizer"]), bstr(r.Measured.Memory["activations"]))
		if t1 >= 0 && t1 != m1 {
			f := rows[t1]
			reason += fmt.Sprintf(", %.2fx less than the fastest, %s (%s); it pays %.2fx the step time (%s against %s) and sends %s per rank per step against %s",
				peak(f)/peak(r), f.Label(), bstr(peak(f)), step(r)/step(f), ms(step(r)), ms(step(f)), bstr(sentBytes(r)), bstr(sentBytes(f)))
		}
		state := float64(res.Params) * 4 * 2 // fp32 params and grads
		if res.Optimizer == "adam" {
			state += float64(res.Params) * 8
		}
		if state <= float64(hw.Device.Memory) {
			reason += fmt.Sprintf(". The model's parameters, gradients and optimizer state take %s per copy and a device here has %s, so plain data parallel fits; shard (tp, ZeRO) when a copy does not fit.", bstr(state), bstr(float64(hw.Device.Memory)))
		} else {
			reason += fmt.Sprintf(". The model's parameters, gradients and optimizer state take %s per copy, more than the %s of a device here: plain data parallel does not fit, shard them (tp, ZeRO).", bstr(state), bstr(float64(hw.Device.Memory)))
		}
		out = append(out, Recommendation{Objective: "memory", Choice: r.Label(), Reason: reason})
	}
	multi := func(r Row) bool { return r.Ranks > 1 }
	c1, c2 := best(func(a, c Row) bool {
		return sentBytes(a) < sentBytes(c) || sentBytes(a) == sentBytes(c) && step(a) < step(c)
	}, multi)
	if c1 >= 0 {
		r := rows[c1]
		reason := fmt.Sprintf("Sends %s per rank per step", bstr(sentBytes(r)))
		var dims []string
		for _, d := range []string{"dp", "tp"} {
			if v := r.Measured.CommBytes[d]; v > 0 {
				dims = append(dims, fmt.Sprintf("%s on %s", bstr(v), d))
			}
		}
		if len(dims) > 0 {
			reason += " (" + strings.Join(dims, ", ") + ")"
		}
		if c2 >= 0 {
			o := rows[c2]
			if sentBytes(r) > 0 {
				reason += fmt.Sprintf(", %.2fx less than the next, %s (%s)", sentBytes(o)/sentBytes(r), o.Label(), bstr(sentBytes(o)))
			} else {
				reason += fmt.Sprintf(", against %s for the next, %s", bstr(sentBytes(o)), o.Label())
			}
		}
		reason += fmt.Sprintf("; its step takes %s. Data parallel sends every gradient each step, tensor parallel sends activations every layer: which is less depends on batch x sequence against the parameter count.", ms(step(r)))
		out = append(out, Recommendation{Objective: "communication", Choice: r.Label(), Reason: reason})
	}
	return out
}
