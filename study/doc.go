// Package study runs a planning study: a sweep of tpsim plan over models, hardware (with named
// what-ifs), GPU counts and objectives, read from one YAML or JSON file, and turns the results
// into a report a team can decide from (study.html, study.md, cells.csv, cells.jsonl).
//
// Invariants:
//   - Parse is pure (no file access) and never panics: every problem of a study file is an error
//     with its line and column, and, for a name, the valid names. Resolve loads what the file names.
//   - Every number in a report comes from search.Plan through the same Request a
//     `tpsim plan` command line gives (Cell.PlanArgs prints it); the report only adds arithmetic on
//     those numbers (time to train = token budget / tokens per second, GPU-hours = GPUs x hours,
//     cost = GPU-hours x the given price).
//   - A job (one cell and one objective, or one probe of the search for the smallest GPU count
//     that fits) is keyed by a SHA-256 of everything its plan depends on:
//     the model and hardware as JSON (what-ifs applied), the GPU count, global batch, sequence,
//     fixed options, objective, top, sim mode and the tpsim build. Prices, token budgets and node
//     limits are not part of the key: changing them re-prices nothing.
//   - cells.jsonl is appended one whole line per finished job (one write with O_APPEND); on resume
//     a torn last line is cut off and lines with unknown keys are ignored. A finished run rewrites it
//     atomically in the study's fixed order, so its bytes, like every output's, depend only on the
//     study and the build, never on scheduling, interruption or resumption.
//   - Every output file is written atomically (temp file in the same directory, then rename).
//
// Units: seconds, bytes, tokens, GPU-hours; prices per GPU-hour in the study's currency.
package study
