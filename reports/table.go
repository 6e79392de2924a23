package reports

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Markdown writes a GitHub-flavoured Markdown table: the header, a separator, then one line per
// row, cells padded to their column's width so that the source reads as a table too. A column
// whose every non-empty cell starts like a number ("12", "-3.5", "1.4 ms", "+7%") is right-aligned.
// A "|" in a cell is escaped and a newline becomes "<br>". It returns an error when a row has
// a different number of cells than the header.
func Markdown(w io.Writer, header []string, rows [][]string) error {
	if err := checkTable(header, rows); err != nil {
		return err
	}
	esc := func(s string) string {
		s = strings.ReplaceAll(s, "|", `\|`)
		s = strings.ReplaceAll(s, "\r\n", "<br>")
		return strings.ReplaceAll(s, "\n", "<br>")
	}
	all := append([][]string{header}, rows...)
	cells := make([][]string, len(all))
	width := make([]int, len(header))
	for i, r := range all {
		cells[i] = make([]string, len(r))
		for j, c := range r {
			cells[i][j] = esc(c)
			width[j] = max(width[j], utf8.RuneCountInString(cells[i][j]), 3)
		}
	}
	right := make([]bool, len(header))
	for j := range header {
		right[j] = len(rows) > 0
		for _, r := range rows {
			if r[j] != "" && !numeric(r[j]) {
				right[j] = false
				break
			}
		}
	}
	var b strings.Builder
	line := func(r []string) {
		b.WriteString("|")
		for j, c := range r {
			pad := strings.Repeat(" ", width[j]-utf8.RuneCountInString(c))
			if right[j] {
				b.WriteString(" " + pad + c + " |")
			} else {
				b.WriteString(" " + c + pad + " |")
			}
		}
		b.WriteString("\n")
	}
	line(cells[0])
	b.WriteString("|")
	for j := range header {
		if right[j] {
			b.WriteString(" " + strings.Repeat("-", width[j]-1) + ": |")
		} else {
			b.WriteString(" " + strings.Repeat("-", width[j]) + " |")
		}
	}
	b.WriteString("\n")
	for _, r := range cells[1:] {
		line(r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// numeric reports whether s starts like a number: an optional sign, then a digit or a point
// followed by a digit.
func numeric(s string) bool {
	s = strings.TrimLeft(s, "+-−")
	if strings.HasPrefix(s, ".") {
		s = s[1:]
	}
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// Number formats v for a CSV cell: a whole number as an integer (1717248, not 1.71725e+06) and
// anything else at full precision, the shortest text that reads back to the same float64
// (seconds keep every digit). Every CSV tpsim writes formats its numbers with it.
func Number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Commas writes n with thousands separators: 1,234,567.
func Commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// CSV writes the header and rows as CSV (RFC 4180, through encoding/csv). It returns an error when
// a row has a different number of cells than the header.
func CSV(w io.Writer, header []string, rows [][]string) error {
	if err := checkTable(header, rows); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := cw.WriteAll(rows); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

func checkTable(header []string, rows [][]string) error {
	if len(header) == 0 {
		return fmt.Errorf("reports: a table needs a header")
	}
	for i, r := range rows {
		if len(r) != len(header) {
			return fmt.Errorf("reports: table row %d has %d cells, the header %d", i+1, len(r), len(header))
		}
	}
	return nil
}

// WriteJSON writes v as indented JSON, as every tpsim --json and results file does: HTML
// characters unescaped, map keys sorted by encoding/json, so the bytes are deterministic.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
