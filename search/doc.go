// Package search finds the strategy to use (Plan): it prices every candidate of a
// strategies.Space with the closed form derived from the Program (costmodel.Derived.Quick; a
// pipeline's step first as a lower bound of its timeline, and the memory of a candidate whose
// parameters alone do not fit as a lower bound of its peak),
// drops those that do not fit in device memory, ranks the rest by an objective (RankExact, which
// makes every candidate it names exact), keeps the Pareto front of step time against peak memory,
// re-ranks the closed form's best Request.SimTop with the discrete-event simulator, and explains
// the choice.
//
// It is deterministic, like costmodel and sim: no clock, no randomness. Plan prices the
// candidates in small contiguous index ranges (EvaluateRange) that its goroutines take in turn,
// each writing its own part of one slice, and simulates its best candidates on one goroutine each;
// every result depends only on the candidates' order, so it is the same, byte for byte, however
// the work was split.
//
// Objectives (ties are broken by step time, then by the candidate's place in the enumeration,
// which puts simpler strategies first):
//
//   - time: step time (one optimizer step over the global batch, the slowest pipeline rank).
//   - memory: peak bytes per device (the most loaded rank).
//   - comm: bytes one device sends per step over the slowest link the job uses: the outermost
//     topology level its devices span (InfiniBand between nodes on a cluster, NVLink inside
//     one node), counting every mesh dimension whose groups reach that level. The bytes are
//     those of the collectives of those groups, CommBytes of `tpsim predict`; a hierarchical
//     collective sends part of them inside the node, so this is an upper bound of what crosses
//     the slow link, and the same for every candidate.
//   - balanced: the smallest max(step / fastest step, peak / smallest peak) over the feasible
//     candidates: the candidate whose worse relative loss against the best of each objective
//     is least. It lies on the Pareto front.
//
// Units: seconds, bytes, as in costmodel.
package search
