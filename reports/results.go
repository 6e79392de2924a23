package reports

import (
	"bytes"
	"io"
	"path/filepath"

	"github.com/tpsim/tpsim/internal/atomicfile"
)

// WriteResults writes into dir, each file atomically, NAME.csv (the table), NAME.json (v, as
// --json prints it) and, when figure returns one, FIGURE.png and FIGURE.svg (plan --out,
// validate --out).
func WriteResults(dir, name string, header []string, rows [][]string, v any, figName string, figure func() (*Figure, error)) error {
	if err := atomicfile.CheckDir(dir); err != nil {
		return err
	}
	var csv, js bytes.Buffer
	if err := CSV(&csv, header, rows); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, name+".csv"), csv.Bytes(), 0o644); err != nil {
		return err
	}
	if err := WriteJSON(&js, v); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, name+".json"), js.Bytes(), 0o644); err != nil {
		return err
	}
	fig, err := figure()
	if fig == nil || err != nil {
		return err
	}
	return Save(fig, dir, figName, DefaultWidth, DefaultHeight)
}

// PrintResult prints v as JSON (asJSON) or as text, whole or not at all: a command that fails
// while rendering prints nothing (plan, validate, fit).
func PrintResult(w io.Writer, asJSON bool, v any, text func(io.Writer) error) error {
	var buf bytes.Buffer
	var err error
	if asJSON {
		err = WriteJSON(&buf, v)
	} else {
		err = text(&buf)
	}
	if err != nil {
		return err
	}
	_, err = w.Write(buf.Bytes())
	return err
}
