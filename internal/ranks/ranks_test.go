package ranks

import (
	"math"
	"slices"
	"testing"
)

func TestFormat(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{}, ""},
		{[]int{4}, "4"},
		{[]int{0, 1, 2, 3, 5, 7, 8}, "0-3,5,7-8"},
		{[]int{0, 2, 4}, "0,2,4"},
		{[]int{0, 1, 2, 3, 4, 5, 6}, "0-6"},
		{[]int{8, 7, 5, 3, 2, 1, 0}, "0-3,5,7-8"},
		{[]int{1, 1, 2, 2, 5, 5}, "1-2,5"},
		{[]int{-3, -2, -1, 0}, "-3-0"},
		{[]int{math.MaxInt - 1, math.MaxInt}, "9223372036854775806-9223372036854775807"},
		{[]int{math.MinInt, math.MaxInt}, "-9223372036854775808,9223372036854775807"},
	} {
		in := slices.Clone(tc.in)
		if got := Format(in); got != tc.want {
			t.Errorf("Format(%v) = %q, want %q", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("Format modified its input: %v", in)
		}
	}
}
