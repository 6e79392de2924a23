//go:build !purego

package cpufeat

// purego is false in default builds; see tags_purego_test.go.
const purego = false
