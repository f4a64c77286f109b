package hang

import (
	"strings"

	"github.com/mpiprobe/mpiprobe/agg"
)

// commKind says how far a communicator key can be compared.
type commKind uint8

const (
	shared  commKind = iota // the same communicator on every member
	private                 // only the owning rank is a member (SELF, size 1)
	local                   // a rank-local handle: comparable with nothing
)

// commKey is what Diagnose compares communicators by.
type commKey struct {
	name  string
	id    uint64
	size  int
	kind  commKind
	owner int // the rank for private and local keys; -1 for shared ones
}

// keyOf returns the comparison key of c as named by rank.
func keyOf(c agg.Comm, rank int) commKey {
	switch {
	case c.Name == "WORLD":
		// Neither ID nor Size matters: there is one MPI_COMM_WORLD,
		// even when only local handles are known. Its size is the
		// largest any rank reports (diag.worldSize).
		return commKey{name: c.Name, kind: shared, owner: -1}
	case c.Name == "SELF" || c.Size == 1:
		return commKey{name: c.Name, id: c.ID, size: c.Size, kind: private, owner: rank}
	case c.Local:
		return commKey{name: c.Name, id: c.ID, size: c.Size, kind: local, owner: rank}
	default:
		return commKey{name: c.Name, id: c.ID, size: c.Size, kind: shared, owner: -1}
	}
}

// isWorld reports whether k is MPI_COMM_WORLD.
func (k commKey) isWorld() bool { return k.kind == shared && k.name == "WORLD" }

// lessComm orders Comm values so that the one shown for a key is chosen
// deterministically.
func lessComm(a, b agg.Comm) bool {
	if a.ID != b.ID {
		return a.ID < b.ID
	}
	if a.Size != b.Size {
		return a.Size < b.Size
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return !a.Local && b.Local
}

// baseName reduces an MPI function name to its lower-case stem:
// "PMPI_Allreduce_c" and "mpi_allreduce_" both give "allreduce".
func baseName(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	if strings.HasPrefix(n, "pmpi_") {
		n = n[1:]
	}
	n = strings.TrimPrefix(n, "mpi_")
	n = strings.TrimRight(n, "_")
	n = strings.TrimSuffix(n, "_f08")
	n = strings.TrimSuffix(n, "_c")
	return n
}

// collectives are the stems of the MPI functions that are collective over
// their communicator. Nonblocking ("i") and persistent ("_init") forms are
// derived in isCollectiveName.
var collectives = setOf(
	"barrier", "bcast", "gather", "gatherv", "scatter", "scatterv",
	"allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw",
	"reduce", "allreduce", "reduce_scatter", "reduce_scatter_block",
	"scan", "exscan",
	"neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall",
	"neighbor_alltoallv", "neighbor_alltoallw",
	"comm_split", "comm_split_type", "comm_dup", "comm_dup_with_info",
	"comm_idup", "comm_idup_with_info", "comm_create", "comm_create_group",
	"comm_free", "comm_accept", "comm_connect", "comm_spawn",
	"comm_spawn_multiple", "intercomm_create", "intercomm_merge",
	"cart_create", "cart_sub", "graph_create", "dist_graph_create",
	"dist_graph_create_adjacent",
	"win_create", "win_allocate", "win_allocate_shared",
	"win_create_dynamic", "win_fence", "win_free",
	"file_open", "file_close", "file_set_view", "file_set_size",
	"file_preallocate", "file_sync", "file_read_all", "file_write_all",
	"file_read_at_all", "file_write_at_all", "file_read_ordered",
	"file_write_ordered", "finalize",
)

// notCollectives are stems that are never collective, whatever the
// collector says about them: point-to-point, completion and one-sided
// calls.
var notCollectives = setOf(
	"send", "bsend", "ssend", "rsend", "isend", "ibsend", "issend", "irsend",
	"recv", "irecv", "sendrecv", "sendrecv_replace", "isendrecv",
	"isendrecv_replace", "probe", "iprobe", "mprobe", "improbe", "mrecv",
	"imrecv", "wait", "waitall", "waitany", "waitsome", "test", "testall",
	"testany", "testsome", "start", "startall", "send_init", "bsend_init",
	"ssend_init", "rsend_init", "recv_init", "psend_init", "precv_init",
	"put", "get", "accumulate", "get_accumulate", "fetch_and_op",
	"compare_and_swap", "rput", "rget", "raccumulate", "rget_accumulate",
	"win_lock", "win_unlock", "win_lock_all", "win_unlock_all", "win_flush",
	"win_flush_all", "win_flush_local", "win_flush_local_all", "win_post",
	"win_start", "win_complete", "win_wait", "win_test",
)

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// isCollectiveName reports whether name is a known collective MPI function.
func isCollectiveName(name string) bool {
	n := baseName(name)
	if collectives[n] {
		return true
	}
	n = strings.TrimSuffix(n, "_init")
	return collectives[n] || (strings.HasPrefix(n, "i") && collectives[n[1:]])
}

// isCollective decides whether a call on a known communicator is a
// collective: a known collective name, or an unknown name the collector
// numbered (Seq > 0), which it only does for collectives.
func isCollective(name string, seq uint64) bool {
	if isCollectiveName(name) {
		return true
	}
	return seq > 0 && !notCollectives[baseName(name)]
}

// direction is the preposition before a point-to-point peer.
func direction(name string) string {
	n := baseName(name)
	switch {
	case strings.Contains(n, "sendrecv"):
		return "with"
	case strings.Contains(n, "recv") || strings.Contains(n, "probe"):
		return "from"
	case strings.Contains(n, "send"):
		return "to"
	default:
		return "with"
	}
}
