package probes

import (
	"strings"
	"testing"
)

func TestErrorDetail(t *testing.T) {
	tests := []struct {
		detail uint64
		api    string
		want   string
	}{
		{6, "MPI_Send", "MPI_ERR_RANK in MPI_Send"},
		{15, "MPI_Recv", "MPI_ERR_TRUNCATE in MPI_Recv"},             // Open MPI numbers TRUNCATE 15
		{0x80 | 14, "internal_Recv", "MPI_ERR_TRUNCATE in MPI_Recv"}, // MPICH numbers it 14 and names its internal function
		{0x80 | 6, "MPI_Send", "MPI_ERR_RANK in MPI_Send"},
		{0x80 | 6, "PMPI_Send", "MPI_ERR_RANK in MPI_Send"}, // MPICH 3.4 names the profiling entry point
		{0x80 | 15, "", "MPI_ERR_OTHER"},
		{0x7f, "MPI_Foo", "error class 127 in MPI_Foo"},
		{(0x5555 << 8) | 6, "MPI_Isend", "MPI_ERR_RANK in MPI_Isend"}, // the name's address above the class is ignored
	}
	for _, tt := range tests {
		if got := errorDetail(tt.detail, tt.api); got != tt.want {
			t.Errorf("errorDetail(%#x, %q) = %q, want %q", tt.detail, tt.api, got, tt.want)
		}
	}
}

func TestDescribeSuggests(t *testing.T) {
	cat := Full()
	tests := []struct {
		event, detail string
		peak          uint64
		want          string
	}{
		{"pal.free_list.at_max", "mca_btl_vader_frag_t", 64, "try --mca btl_vader_free_list_max 128 (twice the 64 it hit)"},
		{"pal.free_list.at_max", "mca_btl_tcp_frag_eager_t", 8, "--mca btl_tcp_free_list_max 16"},
		{"pal.free_list.grow", "mca_pml_ob1_recv_request_t", 2052, "try --mca pml_ob1_free_list_num 2052"},
		{"openib.srq_grown", "", 4096, "max_wr 4096"},
	}
	for _, tt := range tests {
		info, ok := cat.Describe(tt.event, tt.detail, tt.peak)
		if !ok || !strings.Contains(info.Advice, tt.want) {
			t.Errorf("Describe(%s, %s, %d) = %+v, %v; want advice containing %q", tt.event, tt.detail, tt.peak, info, ok, tt.want)
		}
	}
	// No suggestion without data, or for a class mpiprobe does not know.
	for _, tt := range []struct {
		event, detail string
		peak          uint64
	}{{"pal.free_list.at_max", "some_class_t", 64}, {"pal.free_list.at_max", "mca_btl_vader_frag_t", 0}} {
		info, _ := cat.Describe(tt.event, tt.detail, tt.peak)
		if strings.Contains(info.Advice, "try --mca") {
			t.Errorf("Describe(%s, %s, %d) suggests %q", tt.event, tt.detail, tt.peak, info.Advice)
		}
	}
	if info, _ := cat.Describe("mpi.error", "", 0); info.Layer != "errors" {
		t.Errorf("mpi.error layer %q, want errors", info.Layer)
	}
	if _, ok := cat.Describe("no.such", "", 0); ok {
		t.Error("Describe knows an unknown event")
	}
}

func TestEntriesListEveryEventAndLibrary(t *testing.T) {
	cat := Full().Select(Default)
	targets := []Target{{Library: OMPILibMPI, Display: "/lib/libmpi.so.40"}}
	st := []Status{{Event: "mpi.error", Library: OMPILibMPI, File: "/lib/libmpi.so.40", Attached: true}}
	es := Entries(cat, 42, targets, st)
	rows := 0
	for _, e := range cat.Events {
		libs := map[Library]bool{}
		for _, p := range e.Probes {
			libs[p.Library] = true
		}
		rows += len(libs)
	}
	if len(es) != rows {
		t.Fatalf("%d entries, want one per (event, library) = %d", len(es), rows)
	}
	for _, e := range es {
		switch {
		case e.Event == "mpi.error" && e.Library == OMPILibMPI:
			if !e.Attached || e.File != "/lib/libmpi.so.40" {
				t.Errorf("mpi.error in libmpi: %+v", e)
			}
		case e.Event == "mpi.error" && e.Library == MPICHLib:
			if e.Attached || e.Reason != "library not loaded: pid 42 maps no libmpich file" {
				t.Errorf("mpi.error in libmpich: %+v", e)
			}
		case e.Attached:
			t.Errorf("%s in %s attached without a status", e.Event, e.Library)
		}
	}
}
