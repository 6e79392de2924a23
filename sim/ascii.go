package sim

import (
	"fmt"
	"io"
	"strings"

	"github.com/tpsim/tpsim/program"
	"github.com/tpsim/tpsim/units"
)

// WriteASCII draws the timeline of res, one character per quantum seconds: for each pipeline
// rank a line for its main sequence (forward of microbatch j as the digit j mod 10, backward as
// the letter a+j, blocking communication '~', the optimizer 'o', idle '.') and, when it has any, a
// line for its communication stream ('=' for gradient buckets, 'g' for parameter gathers).
// res must have been simulated with Options.Spans.
func WriteASCII(w io.Writer, res *Result, quantum units.Seconds) error {
	n := int(float64(res.Step)/float64(quantum) + 0.5)
	ranks := len(res.Utilization)
	main := make([][]byte, ranks)
	comm := make([][]byte, ranks)
	for r := range main {
		main[r] = []byte(strings.Repeat(".", n))
		comm[r] = []byte(strings.Repeat(" ", n))
	}
	hasComm := make([]bool, ranks)
	for _, s := range res.Spans {
		ch := byte('~')
		line := main[s.Rank]
		switch {
		case s.Kind == program.OpStep:
			ch = 'o'
		case s.Stream == "compute" && s.Phase == program.Forward:
			ch = byte('0' + s.Micro%10)
		case s.Stream == "compute" && s.Phase == program.Backward:
			ch = byte('a' + s.Micro%26)
		case s.Stream == "compute":
			ch = 'o'
		case s.Kind == program.OpRecv:
			continue
		}
		if s.Async {
			line, ch = comm[s.Rank], '='
			if s.Micro >= 0 {
				ch = 'g'
			}
			hasComm[s.Rank] = true
		}
		lo := int(float64(s.Start)/float64(quantum) + 0.5)
		hi := int(float64(s.End)/float64(quantum) + 0.5)
		for i := lo; i < hi && i < n; i++ {
			line[i] = ch
		}
	}
	for r := 0; r < ranks; r++ {
		if _, err := fmt.Fprintf(w, "rank %d |%s|\n", r, main[r]); err != nil {
			return err
		}
		if hasComm[r] {
			if _, err := fmt.Fprintf(w, "  comm |%s|\n", comm[r]); err != nil {
				return err
			}
		}
	}
	return nil
}
