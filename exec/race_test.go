//go:build race

package exec

// raceOn shortens the equivalence tests under the race detector, which looks for data races
// (every path of the mailbox, the ZeRO collectives and the schedules still runs), not for
// numerical differences: 3 steps under SGD instead of 10 under SGD and Adam.
const raceOn = true
