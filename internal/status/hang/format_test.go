package hang

import (
	"testing"

	"github.com/mpiprobe/mpiprobe/agg"
)

func TestSubject(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{[]int{3}, "rank 3"},
		{[]int{7, 9}, "ranks 7,9"},
		{seq(512), "ranks 0-511"},
		{[]int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24}, "ranks 0,2,4,6,8,10,12,14,16,18,20,22,24"},
		{[]int{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30}, "ranks 0,2,4,6,8,10,12,...,30 (16 in all)"},
	} {
		if got := subject(tc.in); got != tc.want {
			t.Errorf("subject(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCommString(t *testing.T) {
	for _, tc := range []struct {
		c    agg.Comm
		want string
	}{
		{agg.Comm{ID: 0, Size: 8, Name: "WORLD"}, "WORLD (size 8)"},
		{agg.Comm{ID: 1, Size: 1, Name: "SELF"}, "SELF (size 1)"},
		{agg.Comm{ID: 3, Size: 4}, "comm 3 (size 4)"},
		{agg.Comm{ID: 0x7f12, Size: 4, Local: true}, "comm 0x7f12 (size 4, local handle)"},
		{agg.Comm{ID: 3}, "comm 3 (size unknown)"},
		{agg.Comm{ID: 0x7f12, Local: true}, "comm 0x7f12 (size unknown, local handle)"},
		{agg.Comm{ID: 0x44000000, Size: 8, Name: "WORLD", Local: true}, "WORLD (size 8)"},
		{agg.Comm{Size: 2, Name: "bad\nname"}, "bad name (size 2)"},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("%#v.String() = %q, want %q", tc.c, got, tc.want)
		}
	}
}

func TestKeyOf(t *testing.T) {
	// WORLD is one communicator whatever the handle.
	if keyOf(agg.Comm{ID: 1, Size: 8, Name: "WORLD", Local: true}, 0) != keyOf(agg.Comm{ID: 2, Size: 8, Name: "WORLD"}, 5) {
		t.Error("WORLD keys differ across ranks")
	}
	// Same context id, same size: equal keys (told apart by membership).
	if keyOf(agg.Comm{ID: 3, Size: 4}, 0) != keyOf(agg.Comm{ID: 3, Size: 4}, 5) {
		t.Error("shared keys differ across ranks")
	}
	// Different sizes: different communicators.
	if keyOf(agg.Comm{ID: 3, Size: 4}, 0) == keyOf(agg.Comm{ID: 3, Size: 5}, 5) {
		t.Error("halves of different sizes compare equal")
	}
	// Private and local keys never match another rank's.
	for _, c := range []agg.Comm{{ID: 1, Size: 1, Name: "SELF"}, {ID: 9, Size: 1}, {ID: 9, Size: 4, Local: true}} {
		if keyOf(c, 0) == keyOf(c, 1) {
			t.Errorf("%v compares equal across ranks", c)
		}
	}
}

func TestClassification(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  uint64
		want bool
	}{
		{"MPI_Allreduce", 0, true},
		{"PMPI_Allreduce", 0, true},
		{"mpi_allreduce_", 0, true},
		{"MPI_ALLREDUCE", 0, true},
		{"MPI_Allreduce_c", 0, true},
		{"MPI_Iallreduce", 0, true},
		{"MPI_Allreduce_init", 0, true},
		{"MPI_Ibarrier", 0, true},
		{"MPI_Comm_split", 0, true},
		{"MPI_Intercomm_create", 0, true},
		{"MPI_Recv", 0, false},
		{"MPI_Recv", 5, false},
		{"MPI_Wait", 3, false},
		{"MPI_Send_init", 0, false},
		{"MPIX_Something", 0, false},
		{"MPIX_Something", 2, true},
		{"", 0, false},
	} {
		if got := isCollective(tc.name, tc.seq); got != tc.want {
			t.Errorf("isCollective(%q, %d) = %v, want %v", tc.name, tc.seq, got, tc.want)
		}
	}
	for name, want := range map[string]string{
		"MPI_Recv": "from", "MPI_Irecv": "from", "MPI_Probe": "from", "MPI_Mrecv": "from",
		"MPI_Send": "to", "MPI_Ssend": "to", "MPI_Isend": "to",
		"MPI_Sendrecv": "with", "MPI_Wait": "with",
	} {
		if got := direction(name); got != want {
			t.Errorf("direction(%q) = %q, want %q", name, got, want)
		}
	}
}
