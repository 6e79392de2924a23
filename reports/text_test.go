package reports

import (
	"bytes"
	"errors"
	"testing"
)

func TestShortCount(t *testing.T) {
	cases := []struct {
		n    int64
		want string
	}{
		{999, "999"}, {111010, "111K"}, {1317654528, "1.32B"}, {6738415616, "6.74B"},
		{12858214400, "12.9B"}, {174615846912, "175B"}, {1008038758400, "1.01T"},
	}
	for _, c := range cases {
		if got := ShortCount(c.n); got != c.want {
			t.Errorf("ShortCount(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestPercent(t *testing.T) {
	for _, c := range []struct {
		x, of float64
		want  string
	}{{1, 4, "25.0%"}, {2, 3, "66.7%"}, {5, 0, "-"}, {0, 7, "0.0%"}} {
		if got := Percent(c.x, c.of); got != c.want {
			t.Errorf("Percent(%g, %g) = %q, want %q", c.x, c.of, got, c.want)
		}
	}
}

// failAfter accepts n writes, then fails every one.
type failAfter struct {
	n   int
	buf bytes.Buffer
}

var errFull = errors.New("disk full")

func (f *failAfter) Write(b []byte) (int, error) {
	if f.n == 0 {
		return 0, errFull
	}
	f.n--
	return f.buf.Write(b)
}

// ErrWriter keeps the first error and writes nothing after it.
func TestErrWriter(t *testing.T) {
	f := &failAfter{n: 1}
	ew := &ErrWriter{W: f}
	ew.Printf("a%d", 1)
	ew.Printf("b")
	ew.Printf("c")
	if f.buf.String() != "a1" || !errors.Is(ew.Err, errFull) {
		t.Errorf("wrote %q, err %v; want \"a1\" and the first error", f.buf.String(), ew.Err)
	}
}
