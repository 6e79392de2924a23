package units

import (
	"fmt"
	"testing"
)

func TestString(t *testing.T) {
	cases := []struct {
		got, want string
	}{
		{Bytes(0).String(), "0 B"},
		{Bytes(512).String(), "512 B"},
		{(3 * GiB / 2).String(), "1.5 GiB"},
		{Seconds(0.0123).String(), "12.3 ms"},
		{Seconds(2.5e-6).String(), "2.5 µs"},
		{Seconds(3).String(), "3 s"},
		{FLOPs(3.1e15).String(), "3.1 PFLOP"},
		{(312 * TFLOPs).String(), "312 TFLOP/s"},
		{(300 * GB).String(), "300 GB/s"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func ExampleBytes_String() {
	fmt.Println(80 * GiB)
	// Output: 80 GiB
}
