//go:build !race

package exec

const raceOn = false
