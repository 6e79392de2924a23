package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"

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

// writeResults writes into dir, each file atomically, NAME.csv (the table), NAME.json (v, as
// --json prints it) and, when figure returns one, FIGURE.png and FIGURE.svg (plan --out,
// validate --out).
func writeResults(dir, name string, header []string, rows [][]string, v any, figName string, figure func() (*reports.Figure, error)) error {
	if err := atomicfile.CheckDir(dir); err != nil {
		return err
	}
	var csv, js bytes.Buffer
	if err := reports.CSV(&csv, header, rows); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, name+".csv"), csv.Bytes(), 0o644); err != nil {
		return err
	}
	if err := reports.WriteJSON(&js, v); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, name+".json"), js.Bytes(), 0o644); err != nil {
		return err
	}
	fig, err := figure()
	if fig == nil || err != nil {
		return err
	}
	return reports.Save(fig, dir, figName, reports.DefaultWidth, reports.DefaultHeight)
}

// printResult prints v as JSON (asJSON) or as text, whole or not at all: a command that fails
// while rendering prints nothing (plan, validate, fit).
func printResult(w io.Writer, asJSON bool, v any, text func(io.Writer) error) error {
	var buf bytes.Buffer
	var err error
	if asJSON {
		err = reports.WriteJSON(&buf, v)
	} else {
		err = text(&buf)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}
