package status

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/session"
	"github.com/mpiprobe/mpiprobe/probes"
)

// kernel holds the BPF objects status uses: the traced set, the task
// iterator that reads each thread's registers, and the uprobes counting MPI
// calls per thread.
type kernel struct {
	objs  bpf.MpiprobeObjects
	iter  *link.Iter
	links []link.Link
	done  map[[2]uint64]bool
}

func openKernel() (*kernel, error) {
	k := &kernel{done: map[[2]uint64]bool{}}
	if err := bpf.LoadMpiprobeObjects(&k.objs, nil); err != nil {
		return nil, session.ExplainLoad("load BPF programs", err)
	}
	it, err := link.AttachIter(link.IterOptions{Program: k.objs.DumpRegs})
	if err != nil {
		k.objs.Close()
		return nil, fmt.Errorf("attach the task iterator (kernel 5.8+ with BTF): %w", err)
	}
	k.iter = it
	return k, nil
}

func (k *kernel) close() {
	for _, l := range k.links {
		_ = l.Close()
	}
	if k.iter != nil {
		_ = k.iter.Close()
	}
	k.objs.Close()
}

// watch adds processes to the traced set.
func (k *kernel) watch(pids []int) error {
	for _, pid := range pids {
		if err := k.objs.Traced.Put(uint32(pid), uint32(0)); err != nil {
			return fmt.Errorf("watch pid %d: %w", pid, err)
		}
	}
	return nil
}

// countCalls attaches the call counter to every MPI C function of the C
// libraries among targets (each file once).
func (k *kernel) countCalls(targets []probes.Target) error {
	for _, t := range targets {
		key := [2]uint64{t.Dev, t.Inode}
		if k.done[key] || (t.Library != probes.OMPILibMPI && t.Library != probes.MPICHLib) {
			continue
		}
		names, err := mpiFunctionNames(t.Path)
		if err != nil {
			return fmt.Errorf("attach %s: %w", t.Display, err)
		}
		ex, err := link.OpenExecutable(t.Path)
		if err != nil {
			return fmt.Errorf("attach %s: %w", t.Display, err)
		}
		l, err := ex.UprobeMulti(names, k.objs.StatusEnter, nil)
		if err != nil {
			return fmt.Errorf("attach %s (%d functions): %w", t.Display, len(names), err)
		}
		k.links = append(k.links, l)
		k.done[key] = true
	}
	return nil
}

// regs returns the registers of every thread of the watched processes.
func (k *kernel) regs() ([]bpf.MpiprobeTaskRegs, error) {
	rd, err := k.iter.Open()
	if err != nil {
		return nil, fmt.Errorf("read thread registers: %w", err)
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("read thread registers: %w", err)
	}
	return decodeRegs(data)
}

// decodeRegs splits the iterator's output into records.
func decodeRegs(data []byte) ([]bpf.MpiprobeTaskRegs, error) {
	var r bpf.MpiprobeTaskRegs
	size := binary.Size(r)
	if len(data)%size != 0 {
		return nil, fmt.Errorf("read thread registers: %d bytes is not a whole number of %d-byte records", len(data), size)
	}
	out := make([]bpf.MpiprobeTaskRegs, 0, len(data)/size)
	rd := bytes.NewReader(data)
	for rd.Len() > 0 {
		if err := binary.Read(rd, binary.LittleEndian, &r); err != nil {
			return nil, fmt.Errorf("read thread registers: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// calls returns how many MPI calls each thread entered since countCalls.
func (k *kernel) calls() (map[int]uint64, error) {
	out := map[int]uint64{}
	var tid uint32
	var n uint64
	it := k.objs.StatusCalls.Iterate()
	for it.Next(&tid, &n) {
		out[int(tid)] = n
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read MPI call counts: %w", err)
	}
	return out, nil
}
