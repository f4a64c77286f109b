package agent

import (
	"testing"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/identity"
)

// record makes the BPF record of a process with environment env (cut when
// it is the tail of a longer one) and the given chain of (tgid, comm).
func record(env string, cut bool, chain ...any) *bpf.MpiprobeIdent {
	var r bpf.MpiprobeIdent
	r.StartBoottime = 12_340_000_000 // 12.34 s after boot: 1234 ticks
	for i := range len(env) {
		r.Env[i] = int8(env[i])
	}
	r.EnvLen = uint32(len(env))
	if cut {
		r.EnvCut = 1
	}
	for i := 0; i+1 < len(chain); i += 2 {
		c := &r.Chain[r.ChainLen]
		c.Tgid = uint32(chain[i].(int))
		for j, b := range []byte(chain[i+1].(string)) {
			c.Comm[j] = int8(b)
		}
		r.ChainLen++
	}
	for i := uint32(0); i+1 < r.ChainLen; i++ {
		r.Chain[i].Ppid = r.Chain[i+1].Tgid
	}
	return &r
}

// TestRecordedIdentity: a process's record names it as /proc would have:
// an MPICH rank by its environment and the hydra mpiexec above its proxy,
// an Open MPI rank by the variables at the end of a cut environment (the
// cut first entry is not read as a variable).
func TestRecordedIdentity(t *testing.T) {
	r := recordOf(300, record("PMI_RANK=1\x00PMI_SIZE=2\x00MPI_LOCALRANKID=1\x00", false, 300, "flood", 200, "hydra_pmi_proxy", 100, "mpiexec.hydra", 1, "systemd"))
	id := identity.Resolve(300, r, "node")
	if id.Job != "hydra-100" || id.Rank != "1" || id.Size != "2" || r.comm() != "flood" || r.ticks != 1234 {
		t.Errorf("MPICH record: %+v comm %q ticks %d; want job hydra-100, rank 1 of 2, comm flood, 1234 ticks", id, r.comm(), r.ticks)
	}
	r = recordOf(400, record("MPI_RANK=9\x00PMIX_NAMESPACE=42\x00OMPI_MCA_ess_base_jobid=42\x00OMPI_COMM_WORLD_RANK=0\x00OMPI_COMM_WORLD_SIZE=2\x00", true, 400, "flood"))
	if id := identity.Resolve(400, r, "node"); id.Job != "42" || id.Rank != "0" {
		t.Errorf("Open MPI record: %+v, want job 42 rank 0", id)
	}
	if _, ok := r.env["PI_RANK"]; ok || len(r.env) != 4 {
		t.Errorf("cut environment read as %v: its cut first entry must be dropped", r.env)
	}
}
