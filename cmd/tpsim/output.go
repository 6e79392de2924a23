package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/reports"
)

// The output helpers every subcommand shares: JSON, printing with one error check, the trace file.

// writeJSON writes v as indented JSON, deterministic (reports.WriteJSON).
func writeJSON(w io.Writer, v any) error { return reports.WriteJSON(w, v) }

// errWriter remembers the first write error so that printing code can check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, a ...any) { fmt.Fprintf(e, format, a...) }

// percent formats x/of as a percentage, "-" when of is zero.
func percent(x, of float64) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*x/of)
}

// shortCount formats a parameter count with three significant digits and a K, M, B or T suffix:
// 6738415616 -> "6.74B".
func shortCount(n int64) string {
	x := float64(n)
	for _, u := range []struct {
		div    float64
		suffix string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}} {
		if x >= u.div {
			v := x / u.div
			switch {
			case v >= 100:
				return fmt.Sprintf("%.0f%s", v, u.suffix)
			case v >= 10:
				return fmt.Sprintf("%.1f%s", v, u.suffix)
			default:
				return fmt.Sprintf("%.2f%s", v, u.suffix)
			}
		}
	}
	return fmt.Sprint(n)
}

// writeTraceFile writes spans as a Chrome trace to path.
func writeTraceFile(path string, spans []reports.Span) error {
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return fmt.Errorf("cannot write the trace %s: %v; pass --trace a writable path", path, errors.Unwrap(err))
	}
	defer f.Abort()
	if err := reports.WriteChromeTrace(f, spans); err != nil {
		return err
	}
	return f.Commit()
}
