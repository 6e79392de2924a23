//go:build !race

package cpufeat

// Race is true in a -race build (see race.go).
const Race = false
