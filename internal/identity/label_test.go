package identity

import (
	"strings"
	"testing"
	"unicode"
)

func TestLabel(t *testing.T) {
	tests := []struct {
		name string
		id   Identity
		pid  int
		want string
	}{
		{"plain", Identity{Host: "node1", Job: "12345@0", Rank: "3", Size: "8", Launcher: "openmpi"}, 4242,
			"host=node1 job=12345@0 rank=3 pid=4242"},
		{"unknown", FromEnv(nil), 7, "host=? job=? rank=? pid=7"},
		{"zero value", Identity{}, 1, "host=? job=? rank=? pid=1"},
		{"allocation and hydra", Identity{Host: "cn-001.cluster", Job: "12345/hydra-51230", Rank: "0"}, 51240,
			"host=cn-001.cluster job=12345/hydra-51230 rank=0 pid=51240"},
		{"space quoted", Identity{Host: "node1", Job: "my job", Rank: "0"}, 5, `host=node1 job="my job" rank=0 pid=5`},
		{"newline quoted", Identity{Host: "node1", Job: "a\nrank=9", Rank: "0"}, 5, `host=node1 job="a\nrank=9" rank=0 pid=5`},
		{"escape quoted", Identity{Host: "node1", Job: "\x1b[2J", Rank: "0"}, 5, `host=node1 job="\x1b[2J" rank=0 pid=5`},
		{"quote quoted", Identity{Host: `n"1`, Job: "j", Rank: "0"}, 5, `host="n\"1" job=j rank=0 pid=5`},
		{"backslash quoted", Identity{Host: `n\1`, Job: "j", Rank: "0"}, 5, `host="n\\1" job=j rank=0 pid=5`},
		{"invalid utf-8 quoted", Identity{Host: "n", Job: "\xff", Rank: "0"}, 5, `host=n job="\xff" rank=0 pid=5`},
		{"non-breaking space quoted", Identity{Host: "n", Job: "a\u00a0b", Rank: "0"}, 5, `host=n job="a\u00a0b" rank=0 pid=5`},
		{"comma quoted", Identity{Host: "n", Job: "1,2", Rank: "0"}, 5, `host=n job="1,2" rank=0 pid=5`},
		{"printable unicode kept", Identity{Host: "nœud", Job: "a=b", Rank: "0"}, 5, "host=nœud job=a=b rank=0 pid=5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.id.Label(tt.pid); got != tt.want {
				t.Fatalf("Label = %s, want %s", got, tt.want)
			}
		})
	}
}

// FuzzLabel checks that whatever the environment holds, a label is one
// line of printable text.
func FuzzLabel(f *testing.F) {
	f.Add("node1", "PMIX_NAMESPACE", "job\n1", "OMPI_COMM_WORLD_RANK", "3")
	f.Add("n\x1b", "SLURM_JOB_ID", "12", "PMI_RANK", "x y")
	f.Fuzz(func(t *testing.T, host, k1, v1, k2, v2 string) {
		id := FromEnv(map[string]string{k1: v1, k2: v2})
		id.Host = host
		label := id.Label(1)
		if strings.IndexFunc(label, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			t.Fatalf("label %q has a non-printable character", label)
		}
	})
}
