package reports

import (
	"fmt"
	"io"
)

// ErrWriter remembers the first write error so that printing code can check once, at the end:
// after an error it writes nothing more.
type ErrWriter struct {
	W   io.Writer
	Err error
}

func (e *ErrWriter) Write(b []byte) (int, error) {
	if e.Err != nil {
		return 0, e.Err
	}
	n, err := e.W.Write(b)
	e.Err = err
	return n, err
}

// Printf writes a formatted line part (fmt.Fprintf through e).
func (e *ErrWriter) Printf(format string, a ...any) { fmt.Fprintf(e, format, a...) }

// Percent formats x/of as a percentage with one decimal, "-" when of is zero.
func Percent(x, of float64) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*x/of)
}

// ShortCount formats a count (of parameters) with three significant digits and a K, M, B or T
// suffix: 6738415616 -> "6.74B"; below 1,000 the number itself.
func ShortCount(n int64) string {
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
