package hostlist

import (
	"slices"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string // a part of the error, "" when none
	}{
		{in: "", want: nil},
		{in: "n1", want: []string{"n1"}},
		{in: "n1,gpu07", want: []string{"n1", "gpu07"}},
		{in: "n[1-3,5]", want: []string{"n1", "n2", "n3", "n5"}},
		{in: "n[1-3,5],gpu07", want: []string{"n1", "n2", "n3", "n5", "gpu07"}},
		{in: "n[08-10]", want: []string{"n08", "n09", "n10"}},
		{in: "n[001-002]x", want: []string{"n001x", "n002x"}},
		{in: "r[1-2]n[1-2]", want: []string{"r1n1", "r1n2", "r2n1", "r2n2"}},
		{in: "[1-2]", want: []string{"1", "2"}},
		{in: "a-b.c,n[7]", want: []string{"a-b.c", "n7"}},
		{in: "n[3-3]", want: []string{"n3"}},
		{in: "n[1-3", err: "is not closed"},
		{in: "n1-3]", err: "without '['"},
		{in: "n[1-[2]]", err: "inside a bracket"},
		{in: "n[]", err: "empty brackets"},
		{in: "n[1,,2]", err: "a number is missing"},
		{in: "n[-2]", err: "a number is missing"},
		{in: "n[5-2]", err: "runs backwards"},
		{in: "n[a-b]", err: "is not a number"},
		{in: "n1,,n2", err: "an empty name"},
		{in: "n1,", err: "an empty name"},
		{in: "n[0-99999]", err: "more than 65536 names"},
		{in: "n[0-999]m[0-999]", err: "more than 65536 names"},
		{in: "n[1234567890123456789]", err: "more than 18 digits"},
	} {
		got, err := Expand(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Expand(%q): %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Expand(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
		case tc.err == "" && !slices.Equal(got, tc.want):
			t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Expand(%q): error of several lines: %q", tc.in, err)
		}
	}
}

// TestExpandBound: a list of exactly MaxHosts names is taken, one more is not.
func TestExpandBound(t *testing.T) {
	got, err := Expand("n[1-65536]")
	if err != nil || len(got) != MaxHosts || got[MaxHosts-1] != "n65536" {
		t.Fatalf("Expand(n[1-65536]) = %d names, %v", len(got), err)
	}
	if _, err := Expand("n[1-65536],m"); err == nil {
		t.Fatal("Expand(n[1-65536],m): no error")
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"n[1-3,5],gpu07", "r[1-2]n[01-02]", "n[", "a,b", "x[9-1]", "[0-65535]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := Expand(in)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of several lines: %q", err)
			}
			return
		}
		if len(got) > MaxHosts {
			t.Fatalf("%d names", len(got))
		}
		for _, n := range got {
			if n == "" || strings.ContainsAny(n, "[],") {
				t.Fatalf("name %q of %q", n, in)
			}
		}
		if !strings.ContainsAny(in, "[]") && in != "" && !slices.Equal(got, strings.Split(in, ",")) {
			t.Fatalf("Expand(%q) = %q, want its comma-separated names", in, got)
		}
	})
}
