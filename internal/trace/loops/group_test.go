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
