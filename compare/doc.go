// Package compare predicts and measures parallelism strategies side by side on this machine: the
// rows of `tpsim compare` (predicted by the cost model and the simulator, measured by training
// with exec on goroutine ranks), their errors, the summary, the recommendation, the load other
// processes put on the machine meanwhile, and the files of a comparison (results.json,
// results.csv, report.md, figures). setup.go is what comes before: the grid's exec
// configurations (Points), the hardware profile to predict with (HostProfile: this machine's,
// cached or calibrated now; a GPU preset only when asked for), and a planning study's winner
// measured as a row is (MeasureWinner). cmd/tpsim's compare is its flags and printing.
//
// Measurement on a shared machine: every round visits every strategy in turn, and the share of
// the CPU that other processes used is read from /proc around each run (exec/calibrate's
// SampleCPU). Each row keeps the median step of every round; its spread over rounds is what a
// difference between two rows must exceed before the recommendation calls one faster: within it,
// they tie.
//
// The rows are strategy families (grid.go): single, dp, tp, hybrid on every mesh size, and the
// mechanisms (pp with 1F1B, gpipe, ppdp, zero1-3, recompute) on the smallest size they fit. Each
// mechanism's time is predicted (the cost model's price of its ops: the bubble, ZeRO's all-gathers
// over dp, recompute's replayed forward) and measured (exec's events matched one to one with the
// Program's ops, phases.go); a pipeline's bubble, like its whole split, is the critical rank's on
// both sides (MeasuredSample). A row's memory errors are exec's (memory the ranks held that the
// Program does not declare) and every params/grads/optimizer/activations byte count other than
// predicted; compare exits with status 1 when a row has any.
package compare
