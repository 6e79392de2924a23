//go:build purego

package cpufeat

// purego is true in builds with the purego tag, where cpufeat reports no vector features and no
// cache geometry by design (cpu_other.go), so the tests that compare CPUID with Linux skip.
const purego = true
