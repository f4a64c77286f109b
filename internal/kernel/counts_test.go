package kernel

import "testing"

func TestCString(t *testing.T) {
	tests := []struct {
		in   []int8
		want string
	}{
		{nil, ""},
		{[]int8{0, 'x'}, ""},
		{[]int8{'s', 'm', 0, 'x', 0}, "sm"},
		{[]int8{'a', 'b', 'c'}, "abc"},  // no NUL: the whole buffer
		{[]int8{-61, -87, 0}, "\u00e9"}, // bytes above 127 kept as UTF-8
	}
	for _, tt := range tests {
		if got := CString(tt.in); got != tt.want {
			t.Errorf("CString(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
