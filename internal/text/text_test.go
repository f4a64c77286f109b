package text

import "testing"

func TestLine(t *testing.T) {
	long := make([]byte, 500)
	for i := range long {
		long[i] = 'x'
	}
	if got := Line(string(long)); len(got) != MaxLine+3 {
		t.Errorf("Line of 500 bytes gave %d bytes", len(got))
	}
	if got := Line("a\u2028b\x00c\td"); got != "a b c d" {
		t.Errorf("Line = %q", got)
	}
}
