package probes

import (
	"fmt"
	"strings"

	"github.com/mpiprobe/mpiprobe/bpf"
)

// Error class names by number, as the installed mpi.h headers of Debian's
// Open MPI 4.1.4 and MPICH 4.0.2 define them (the two number them differently).
var (
	ompiErrClasses = map[uint64]string{
		1:  "MPI_ERR_BUFFER",
		2:  "MPI_ERR_COUNT",
		3:  "MPI_ERR_TYPE",
		4:  "MPI_ERR_TAG",
		5:  "MPI_ERR_COMM",
		6:  "MPI_ERR_RANK",
		7:  "MPI_ERR_REQUEST",
		8:  "MPI_ERR_ROOT",
		9:  "MPI_ERR_GROUP",
		10: "MPI_ERR_OP",
		11: "MPI_ERR_TOPOLOGY",
		12: "MPI_ERR_DIMS",
		13: "MPI_ERR_ARG",
		14: "MPI_ERR_UNKNOWN",
		15: "MPI_ERR_TRUNCATE",
		16: "MPI_ERR_OTHER",
		17: "MPI_ERR_INTERN",
		18: "MPI_ERR_IN_STATUS",
		19: "MPI_ERR_PENDING",
		20: "MPI_ERR_ACCESS",
		21: "MPI_ERR_AMODE",
		22: "MPI_ERR_ASSERT",
		23: "MPI_ERR_BAD_FILE",
		24: "MPI_ERR_BASE",
		25: "MPI_ERR_CONVERSION",
		26: "MPI_ERR_DISP",
		27: "MPI_ERR_DUP_DATAREP",
		28: "MPI_ERR_FILE_EXISTS",
		29: "MPI_ERR_FILE_IN_USE",
		30: "MPI_ERR_FILE",
		31: "MPI_ERR_INFO_KEY",
		32: "MPI_ERR_INFO_NOKEY",
		33: "MPI_ERR_INFO_VALUE",
		34: "MPI_ERR_INFO",
		35: "MPI_ERR_IO",
		36: "MPI_ERR_KEYVAL",
		37: "MPI_ERR_LOCKTYPE",
		38: "MPI_ERR_NAME",
		39: "MPI_ERR_NO_MEM",
		40: "MPI_ERR_NOT_SAME",
		41: "MPI_ERR_NO_SPACE",
		42: "MPI_ERR_NO_SUCH_FILE",
		43: "MPI_ERR_PORT",
		44: "MPI_ERR_QUOTA",
		45: "MPI_ERR_READ_ONLY",
		46: "MPI_ERR_RMA_CONFLICT",
		47: "MPI_ERR_RMA_SYNC",
		48: "MPI_ERR_SERVICE",
		49: "MPI_ERR_SIZE",
		50: "MPI_ERR_SPAWN",
		51: "MPI_ERR_UNSUPPORTED_DATAREP",
		52: "MPI_ERR_UNSUPPORTED_OPERATION",
		53: "MPI_ERR_WIN",
		68: "MPI_ERR_RMA_RANGE",
		69: "MPI_ERR_RMA_ATTACH",
		70: "MPI_ERR_RMA_FLAVOR",
		71: "MPI_ERR_RMA_SHARED",
	}
	mpichErrClasses = map[uint64]string{
		1:  "MPI_ERR_BUFFER",
		2:  "MPI_ERR_COUNT",
		3:  "MPI_ERR_TYPE",
		4:  "MPI_ERR_TAG",
		5:  "MPI_ERR_COMM",
		6:  "MPI_ERR_RANK",
		7:  "MPI_ERR_ROOT",
		14: "MPI_ERR_TRUNCATE",
		8:  "MPI_ERR_GROUP",
		9:  "MPI_ERR_OP",
		19: "MPI_ERR_REQUEST",
		10: "MPI_ERR_TOPOLOGY",
		11: "MPI_ERR_DIMS",
		12: "MPI_ERR_ARG",
		15: "MPI_ERR_OTHER",
		13: "MPI_ERR_UNKNOWN",
		16: "MPI_ERR_INTERN",
		17: "MPI_ERR_IN_STATUS",
		18: "MPI_ERR_PENDING",
		20: "MPI_ERR_ACCESS",
		21: "MPI_ERR_AMODE",
		22: "MPI_ERR_BAD_FILE",
		23: "MPI_ERR_CONVERSION",
		24: "MPI_ERR_DUP_DATAREP",
		25: "MPI_ERR_FILE_EXISTS",
		26: "MPI_ERR_FILE_IN_USE",
		27: "MPI_ERR_FILE",
		32: "MPI_ERR_IO",
		36: "MPI_ERR_NO_SPACE",
		37: "MPI_ERR_NO_SUCH_FILE",
		40: "MPI_ERR_READ_ONLY",
		43: "MPI_ERR_UNSUPPORTED_DATAREP",
		28: "MPI_ERR_INFO",
		29: "MPI_ERR_INFO_KEY",
		30: "MPI_ERR_INFO_VALUE",
		31: "MPI_ERR_INFO_NOKEY",
		33: "MPI_ERR_NAME",
		34: "MPI_ERR_NO_MEM",
		35: "MPI_ERR_NOT_SAME",
		38: "MPI_ERR_PORT",
		39: "MPI_ERR_QUOTA",
		41: "MPI_ERR_SERVICE",
		42: "MPI_ERR_SPAWN",
		44: "MPI_ERR_UNSUPPORTED_OPERATION",
		45: "MPI_ERR_WIN",
		46: "MPI_ERR_BASE",
		47: "MPI_ERR_LOCKTYPE",
		48: "MPI_ERR_KEYVAL",
		49: "MPI_ERR_RMA_CONFLICT",
		50: "MPI_ERR_RMA_SYNC",
		51: "MPI_ERR_SIZE",
		52: "MPI_ERR_DISP",
		53: "MPI_ERR_ASSERT",
		55: "MPI_ERR_RMA_RANGE",
		56: "MPI_ERR_RMA_ATTACH",
		57: "MPI_ERR_RMA_SHARED",
		58: "MPI_ERR_RMA_FLAVOR",
		75: "MPI_ERR_SESSION",
		76: "MPI_ERR_PROC_ABORTED",
		77: "MPI_ERR_VALUE_TOO_LARGE",
	}
)

// errorDetail renders mpi_error's detail (enum err_detail in
// bpf/counters.h: the error class, a flag set for MPICH) and the API name read with it, e.g. "MPI_ERR_RANK in
// MPI_Send". MPICH passes the name of its internal function
// ("internal_Send" from 4.1, "PMPI_Send" in 3.4), which is turned back
// into the API's.
func errorDetail(detail uint64, api string) string {
	table := ompiErrClasses
	if detail&uint64(bpf.MpiprobeErrDetailERR_DETAIL_MPICH) != 0 {
		table = mpichErrClasses
	}
	class := detail & uint64(bpf.MpiprobeErrDetailERR_CLASS_MASK)
	name, ok := table[class]
	if !ok {
		name = fmt.Sprintf("error class %d", class)
	}
	if rest, ok := strings.CutPrefix(api, "internal_"); ok {
		api = "MPI_" + rest
	}
	if rest, ok := strings.CutPrefix(api, "PMPI_"); ok {
		api = "MPI_" + rest
	}
	if api == "" {
		return name
	}
	return name + " in " + api
}
