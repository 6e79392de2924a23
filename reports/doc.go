// Package reports draws and tabulates what it is given: Chrome traces, tables and gonum/plot
// figures, from its own input types. It holds no model logic: every number it prints was
// computed by its caller, and it computes nothing but layout.
//
// Output is deterministic: the same input gives the same bytes.
package reports
