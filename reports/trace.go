package reports

import (
	"encoding/json"
	"io"
	"sort"
)

// Span is one interval on a timeline: an op of a rank, on its compute or communication thread.
type Span struct {
	Process string // "rank 0 (dp=0,tp=0)" or "stage 1"
	Thread  string // "compute" or "communication"
	Name    string
	Cat     string
	Start   float64 // seconds since the trace's origin
	Dur     float64 // seconds
	Args    map[string]any
}

type chromeEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  float64        `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	Args map[string]any `json:"args,omitempty"`
}

// WriteChromeTrace writes spans in the Chrome trace event format (JSON object form, complete "X"
// events in microseconds), which Perfetto and chrome://tracing open: one process per Process,
// one thread per Thread, named by metadata events. Processes and threads are numbered in order of
// first appearance, so equal input gives equal bytes.
func WriteChromeTrace(w io.Writer, spans []Span) error {
	pids := map[string]int{}
	tids := map[[2]string]int{}
	var meta, events []chromeEvent
	for _, s := range spans {
		pid, ok := pids[s.Process]
		if !ok {
			pid = len(pids)
			pids[s.Process] = pid
			meta = append(meta, chromeEvent{Name: "process_name", Ph: "M", Pid: pid, Args: map[string]any{"name": s.Process}},
				chromeEvent{Name: "process_sort_index", Ph: "M", Pid: pid, Args: map[string]any{"sort_index": pid}})
		}
		key := [2]string{s.Process, s.Thread}
		tid, ok := tids[key]
		if !ok {
			tid = 0
			for k := range tids {
				if k[0] == s.Process {
					tid++
				}
			}
			tids[key] = tid
			meta = append(meta, chromeEvent{Name: "thread_name", Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{"name": s.Thread}})
		}
		events = append(events, chromeEvent{Name: s.Name, Cat: s.Cat, Ph: "X", Ts: s.Start * 1e6, Dur: s.Dur * 1e6, Pid: pid, Tid: tid, Args: s.Args})
	}
	sort.SliceStable(events, func(i, j int) bool {
		if events[i].Pid != events[j].Pid {
			return events[i].Pid < events[j].Pid
		}
		return events[i].Ts < events[j].Ts
	})
	enc := json.NewEncoder(w)
	return enc.Encode(struct {
		TraceEvents     []chromeEvent `json:"traceEvents"`
		DisplayTimeUnit string        `json:"displayTimeUnit"`
	}{append(meta, events...), "ms"})
}
