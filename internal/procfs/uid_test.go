package procfs

import "testing"

func TestStatusUID(t *testing.T) {
	for in, want := range map[string]int{
		"Name:\tx\nUid:\t1000\t1000\t1000\t1000\n": 1000,
		"Uid:\t0\t0\t0\t0\n":                       0,
		"Name:\tx\n":                               -1,
		"Uid:\tbad\n":                              -1,
	} {
		if got := StatusUID([]byte(in)); got != want {
			t.Errorf("StatusUID(%q) = %d, want %d", in, got, want)
		}
	}
}
