// Package units holds the physical quantities tpsim computes with: bytes, seconds, floating-point
// operations and the rates between them. Each is a float64 in SI base units (bytes, seconds, FLOPs)
// with a String method that picks a readable scale. Decimal prefixes (KB = 1e3) are used for rates and
// FLOPs, binary prefixes (KiB = 1024) for memory sizes, as GPU datasheets and nvidia-smi do.
//
// Invariant: no type here carries a prefix; a value of 1 GiB is Bytes(1<<30).
package units
