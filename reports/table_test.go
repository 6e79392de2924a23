package reports

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestMarkdown(t *testing.T) {
	header := []string{"strategy", "step time", "error", "note"}
	rows := [][]string{
		{"dp=2", "24.1 ms", "+7.5%", "a|b"},
		{"dp=2,tp=2", "9 ms", "-1%", "two\nlines"},
		{"single", "", "0%", ""},
	}
	var b bytes.Buffer
	if err := Markdown(&b, header, rows); err != nil {
		t.Fatal(err)
	}
	// Hand-written: numeric columns right-aligned, "|" escaped, newline as <br>, widths padded.
	want := `| strategy  | step time | error | note         |
| --------- | --------: | ----: | ------------ |
| dp=2      |   24.1 ms | +7.5% | a\|b         |
| dp=2,tp=2 |      9 ms |   -1% | two<br>lines |
| single    |           |    0% |              |
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	var again bytes.Buffer
	if err := Markdown(&again, header, rows); err != nil || again.String() != b.String() {
		t.Errorf("second write differs (err %v)", err)
	}
}

func TestMarkdownHeaderOnly(t *testing.T) {
	var b bytes.Buffer
	if err := Markdown(&b, []string{"a", "bb"}, nil); err != nil {
		t.Fatal(err)
	}
	if want := "| a   | bb  |\n| --- | --- |\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestCSV(t *testing.T) {
	var b bytes.Buffer
	err := CSV(&b, []string{"strategy", "mesh", "step_s"}, [][]string{{"hybrid", "dp=2,tp=2", "0.018"}, {"quote", `say "hi"`, "1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "strategy,mesh,step_s\nhybrid,\"dp=2,tp=2\",0.018\nquote,\"say \"\"hi\"\"\",1\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

func TestTableErrors(t *testing.T) {
	for _, write := range []func(*bytes.Buffer, []string, [][]string) error{
		func(b *bytes.Buffer, h []string, r [][]string) error { return Markdown(b, h, r) },
		func(b *bytes.Buffer, h []string, r [][]string) error { return CSV(b, h, r) },
	} {
		var b bytes.Buffer
		if err := write(&b, []string{"a", "b"}, [][]string{{"1"}}); err == nil || !strings.Contains(err.Error(), "row 1 has 1 cells, the header 2") {
			t.Errorf("short row: error %v", err)
		}
		if err := write(&b, nil, nil); err == nil {
			t.Errorf("no header: no error")
		}
	}
}

// The issue: CSV lost digits (1.71725e+06 where JSON had 1717248). Integers print as integers,
// everything else in full: the digits read back to the same float64 (cells.csv of a study too).
func TestNumber(t *testing.T) {
	for v, want := range map[float64]string{1717248: "1717248", 0: "0", -3: "-3", 0.0123456789012345: "0.0123456789012345",
		539648.5: "539648.5", 1e300: "1e+300", 1.5e-9: "1.5e-09", -2048: "-2048", 80e9: "80000000000", 0.1: "0.1",
		1.0 / 3: "0.3333333333333333", 2.19e-4: "0.000219", 1e20: "1e+20", math.Pi * 1e6: "3.141592653589793e+06"} {
		got := Number(v)
		if got != want {
			t.Errorf("Number(%v) = %q, want %q", v, got, want)
		}
		if back, err := strconv.ParseFloat(got, 64); err != nil || back != v {
			t.Errorf("Number(%v) = %q reads back as %v", v, got, back)
		}
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567", 6738415616: "6,738,415,616"} {
		if got := Commas(n); got != want {
			t.Errorf("Commas(%d) = %q, want %q", n, got, want)
		}
	}
}
