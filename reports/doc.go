// Package reports draws and tabulates what it is given: Chrome traces, tables and gonum/plot
// figures, from its own input types. It holds no model logic: every number it prints was
// computed by its caller, and it computes nothing but layout (units, axes, where labels go).
//
// Inputs: a Row per (strategy, mesh) holds a predicted, a measured and optionally a simulated
// Sample, whose JSON keys ("time_s", "memory_bytes", "comm_bytes") are those of
// `tpsim predict --json`, so results.json reads back into them; a Span is one interval of a
// timeline; a Candidate is one strategy of a search. Times are in seconds and sizes in bytes;
// figures choose the unit to print (ms, MiB, ...) from the largest value.
//
// Figures return a *Figure: one or more gonum/plot panels under a title, with the legend to the
// right of the data so that it hides none of it.
//
//   - PredictedVsMeasured: predicted against measured step time, y = x and a ±15% band.
//   - StepBreakdown: step time split into compute, exposed communication, bubble and optimizer,
//     predicted and measured bars side by side.
//   - MemoryByCategory: memory per rank stacked by category, with the peak marked.
//   - CommBytesByDim: bytes sent per rank per step on each mesh dimension.
//   - PhaseTimes: time per step of the pipeline bubble (the critical pipeline rank's), ZeRO's
//     gathers and recompute (per rank).
//   - Scaling: step time against number of ranks, one line per strategy.
//   - Timeline, Timelines: Gantt charts of spans, one lane per process and thread, for
//     example the simulated step above the measured one.
//   - Pareto: step time against peak memory of a search's candidates, the front and the winner.
//
// Save writes a figure as PNG and SVG; Markdown and CSV write tables; WriteChromeTrace writes
// spans for Perfetto.
//
// Output is deterministic: the same input gives the same bytes. SVG files name their fonts
// (Liberation Sans, which gonum/plot carries for measuring and for PNG) and do not embed them.
package reports
