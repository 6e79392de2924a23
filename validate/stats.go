package validate

import (
	"math"
	"sort"
)

// Summary is the error over some rows: their number, mean and max absolute percentage error.
type Summary struct {
	N      int     `json:"n"`
	MAPE   float64 `json:"mape"`
	MaxAPE float64 `json:"max_ape"`
}

// Group is the error of the rows sharing one value of a key (a source, a GPU type, a metric).
type Group struct {
	Name string `json:"name"`
	Summary
}

// MemorySummary is the error of predicted against measured peak memory.
type MemorySummary struct {
	N         int     `json:"n"`
	MedianAPE float64 `json:"median_ape"`
	MaxAPE    float64 `json:"max_ape"`
}

// Output is the comparison of a set of records; the JSON of `tpsim validate --json`.
type Output struct {
	Rows     []Row         `json:"rows"`
	Skipped  []Skip        `json:"skipped"`
	Summary  Summary       `json:"summary"`
	BySource []Group       `json:"by_source"`
	ByGPU    []Group       `json:"by_gpu"`
	ByMetric []Group       `json:"by_metric"`
	Memory   MemorySummary `json:"memory"`
}

// Run compares every record; unreadable records (skips) are listed first among the skipped.
func Run(recs []Record, skips []Skip, o Options) *Output {
	out := &Output{Rows: []Row{}, Skipped: append([]Skip{}, skips...)}
	for i := range recs {
		row, reason := Compare(&recs[i], o)
		if reason != "" {
			out.Skipped = append(out.Skipped, Skip{ID: recs[i].ID, Reason: reason})
			continue
		}
		out.Rows = append(out.Rows, *row)
	}
	out.Summary = Summarize(out.Rows)
	out.BySource = GroupBy(out.Rows, func(r *Row) string { return r.Source })
	out.ByGPU = GroupBy(out.Rows, func(r *Row) string { return r.GPU })
	out.ByMetric = GroupBy(out.Rows, func(r *Row) string { return r.Metric })
	out.Memory = SummarizeMemory(out.Rows)
	return out
}

// Summarize is the error over rows.
func Summarize(rows []Row) Summary {
	s := Summary{N: len(rows)}
	for _, r := range rows {
		s.MAPE += r.APE
		s.MaxAPE = math.Max(s.MaxAPE, r.APE)
	}
	if s.N > 0 {
		s.MAPE /= float64(s.N)
	}
	return s
}

// GroupBy is the error per value of key, sorted by name.
func GroupBy(rows []Row, key func(*Row) string) []Group {
	by := map[string][]Row{}
	var names []string
	for i := range rows {
		k := key(&rows[i])
		if _, ok := by[k]; !ok {
			names = append(names, k)
		}
		by[k] = append(by[k], rows[i])
	}
	sort.Strings(names)
	out := make([]Group, len(names))
	for i, n := range names {
		out[i] = Group{n, Summarize(by[n])}
	}
	return out
}

// SummarizeMemory is the error of the rows that measured peak memory.
func SummarizeMemory(rows []Row) MemorySummary {
	var apes []float64
	for _, r := range rows {
		if r.Memory != nil {
			apes = append(apes, r.Memory.APE)
		}
	}
	s := MemorySummary{N: len(apes)}
	if len(apes) == 0 {
		return s
	}
	sort.Float64s(apes)
	s.MaxAPE = apes[len(apes)-1]
	if n := len(apes); n%2 == 1 {
		s.MedianAPE = apes[n/2]
	} else {
		s.MedianAPE = (apes[n/2-1] + apes[n/2]) / 2
	}
	return s
}

// Hardest is the k rows of largest error, largest first (ties in input order).
func Hardest(rows []Row, k int) []Row {
	hard := append([]Row(nil), rows...)
	sort.SliceStable(hard, func(i, j int) bool { return hard[i].APE > hard[j].APE })
	return hard[:min(k, len(hard))]
}
