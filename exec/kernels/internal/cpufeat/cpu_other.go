//go:build !amd64 || purego

package cpufeat

func hasAVX2FMA() bool { return false }
func hasAVX512F() bool { return false }

func l1dWays() int { return 0 }
func l2Bytes() int { return 0 }
