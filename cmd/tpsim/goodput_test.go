package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// The default run is the Llama 3 405B snapshot: the closed form's goodput is 90.2% and its
// effective training time 91.2% (derived by hand in the goodput package's doc.go), and the same
// seed prints the same thing twice.
func TestGoodputCommand(t *testing.T) {
	var a, b, errb bytes.Buffer
	if rc := run([]string{"goodput"}, &a, &errb); rc != 0 {
		t.Fatalf("exit %d: %s", rc, errb.String())
	}
	run([]string{"goodput"}, &b, &errb)
	if a.String() != b.String() {
		t.Errorf("two runs with the same seed differ:\n%s\n%s", a.String(), b.String())
	}
	for _, want := range []string{`(?m)^goodput +90\.2%`, `(?m)^effective training time +91\.2%`, "every 42 steps"} {
		if !regexp.MustCompile(want).MatchString(a.String()) {
			t.Errorf("output lacks %q:\n%s", want, a.String())
		}
	}
	var js bytes.Buffer
	if rc := run([]string{"goodput", "--json", "--steps", "1000"}, &js, &errb); rc != 0 {
		t.Fatalf("--json: exit %d: %s", rc, errb.String())
	}
	var got map[string]struct{ Goodput float64 }
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || got["closed_form"].Goodput <= 0 || got["simulation"].Goodput <= 0 {
		t.Errorf("--json: %v %+v", err, got)
	}
}

func TestGoodputBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpus", "0"}, "0 GPUs"},
		{[]string{"--storage-bw", "0"}, "--storage-bw"},
		{[]string{"--jitter-cv", "0.9"}, "jitter"},
		{[]string{"--checkpoint-interval", "-1"}, "--checkpoint-interval"},
	} {
		var out, errb bytes.Buffer
		rc := run(append([]string{"goodput"}, c.args...), &out, &errb)
		if rc != 2 || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", c.args, rc, errb.String(), c.want)
		}
	}
}
