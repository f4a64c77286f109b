package loops

import (
	"reflect"
	"testing"
)

func TestGroupRanks(t *testing.T) {
	tests := []struct {
		name string
		in   map[int]string
		want []Group
	}{
		{"empty", nil, nil},
		{"one", map[int]string{3: "a"}, []Group{{[]int{3}, "a"}}},
		{"largest first", map[int]string{0: "root", 1: "w", 2: "w", 3: "w", 4: "x", 5: "x"},
			[]Group{{[]int{1, 2, 3}, "w"}, {[]int{4, 5}, "x"}, {[]int{0}, "root"}}},
		{"ties by lowest rank", map[int]string{7: "b", 2: "a", 5: "b", 9: "a", 1: "c", 0: "d"},
			[]Group{{[]int{2, 9}, "a"}, {[]int{5, 7}, "b"}, {[]int{0}, "d"}, {[]int{1}, "c"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := GroupRanks(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{4}, "4"},
		{[]int{0, 1, 2, 3, 5, 7, 8}, "0-3,5,7-8"},
		{[]int{1, 3, 5}, "1,3,5"},
		{[]int{0, 1}, "0-1"},
		{[]int{2, 2, 3, 3, 9}, "2-3,9"},
		{[]int{8, 7, 0, 1}, "0-1,7-8"},
	} {
		if got := Ranges(tc.in); got != tc.want {
			t.Errorf("Ranges(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
