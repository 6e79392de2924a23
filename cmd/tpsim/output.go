package main

import (
	"errors"
	"fmt"

	"github.com/tpsim/tpsim/internal/atomicfile"
	"github.com/tpsim/tpsim/reports"
)

// writeTraceFile writes spans as a Chrome trace to path (exec --trace, sim --trace).
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
