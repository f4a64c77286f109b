package report

import (
	"strings"
	"testing"
	"unicode"

	"github.com/mpiprobe/mpiprobe/internal/identity"
)

func TestWarningLine(t *testing.T) {
	due := at(114) // t0 is in the local zone, as the line's clock is
	node1 := &identity.Identity{Host: "node1", Job: "1417805825", Rank: "0"}
	const msg = "send request queued as pending"
	for _, tt := range []struct {
		name string
		w    Warning
		want string
	}{
		{
			name: "window",
			w:    Warning{At: due, ID: node1, PID: 14465, Prefix: "3,872 warnings (in 1 second)", Message: msg},
			want: "[2025-03-01 12:00:00.114] host=node1 job=1417805825 rank=0 pid=14465: 3,872 warnings (in 1 second) : " + msg,
		},
		{
			name: "at finalize with a detail",
			w:    Warning{At: due, ID: node1, PID: 14465, Prefix: "At finalize : 23 times", Message: msg, Detail: "MPI_ERR_RANK in MPI_Send"},
			want: "[2025-03-01 12:00:00.114] host=node1 job=1417805825 rank=0 pid=14465: At finalize : 23 times : " + msg + " [MPI_ERR_RANK in MPI_Send]",
		},
		{
			name: "unknown process",
			w:    Warning{At: due, PID: 7, Prefix: "1 warning", Message: msg},
			want: "[2025-03-01 12:00:00.114] pid=7: 1 warning : " + msg,
		},
		{
			name: "no time (journal)",
			w:    Warning{ID: &identity.Identity{Host: "n2", Job: identity.Unknown, Rank: identity.Unknown}, PID: 9, Prefix: "1,003 warnings", Message: msg},
			want: "host=n2 job=? rank=? pid=9: 1,003 warnings : " + msg,
		},
		{
			name: "hostile detail and identity",
			w: Warning{At: due, ID: &identity.Identity{Host: "h\x1b[31m", Job: "a\nINJECTED", Rank: "0"}, PID: 1,
				Prefix: "1 warning", Message: msg, Detail: "cls\n\x1b]0;owned\x07\r\u202eevil\xff"},
			want: `[2025-03-01 12:00:00.114] host="h\x1b[31m" job="a\nINJECTED" rank=0 pid=1: 1 warning : ` + msg +
				` [cls\n\x1b]0;owned\a\r\u202eevil\xff]`,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.w.Line()
			if got != tt.want {
				t.Errorf("Line() =\n%s\nwant\n%s", got, tt.want)
			}
			if i := strings.IndexFunc(got, func(r rune) bool {
				return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == unicode.ReplacementChar
			}); i >= 0 {
				t.Errorf("Line() holds a control character or invalid UTF-8 at byte %d: %q", i, got)
			}
		})
	}
}
