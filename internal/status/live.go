package status

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/mpiprobe/mpiprobe/bpf"
	"github.com/mpiprobe/mpiprobe/internal/kernel"
	"github.com/mpiprobe/mpiprobe/probes"
)

// objects are the parts of the BPF collection status uses; loading only
// these keeps the other modes' maps out of the kernel.
type objects struct {
	DumpRegs    *ebpf.Program `ebpf:"dump_regs"`
	StatusEnter *ebpf.Program `ebpf:"status_enter"`
	Traced      *ebpf.Map     `ebpf:"traced"`
	StatusCalls *ebpf.Map     `ebpf:"status_calls"`
}

func (o *objects) close() {
	for _, c := range []io.Closer{o.DumpRegs, o.StatusEnter, o.Traced, o.StatusCalls} {
		if c != nil {
			_ = c.Close()
		}
	}
}

// live holds the BPF objects status uses: the traced set, the task
// iterator that reads each thread's registers, and the uprobes counting MPI
// calls per thread.
type live struct {
	objs  objects
	iter  *link.Iter
	links []link.Link
	done  map[[2]uint64]bool
}

func openLive() (*live, error) {
	k := &live{done: map[[2]uint64]bool{}}
	if err := kernel.Load(&k.objs, kernel.Options{}); err != nil {
		return nil, err
	}
	it, err := link.AttachIter(link.IterOptions{Program: k.objs.DumpRegs})
	if err != nil {
		k.objs.close()
		return nil, fmt.Errorf("attach the task iterator (kernel 5.8+ with BTF): %w", err)
	}
	k.iter = it
	return k, nil
}

func (k *live) close() {
	for _, l := range k.links {
		_ = l.Close()
	}
	if k.iter != nil {
		_ = k.iter.Close()
	}
	k.objs.close()
}

// watch adds processes to the traced set.
func (k *live) watch(pids []int) error {
	for _, pid := range pids {
		if err := k.objs.Traced.Put(uint32(pid), uint32(0)); err != nil {
			return fmt.Errorf("watch pid %d: %w", pid, err)
		}
	}
	return nil
}

// countCalls attaches the call counter to every MPI C function of the C
// libraries among targets (each file once). targets hold a file once per
// process that maps it: a path that no longer opens (its process exited
// or unmapped the file while status read it, /proc/PID/map_files/...
// gone) is passed over for the next process's, and a file no process
// still maps is no error.
func (k *live) countCalls(targets []probes.Target) error {
	for _, t := range targets {
		key := [2]uint64{t.Dev, t.Inode}
		if k.done[key] || (t.Library != probes.OMPILibMPI && t.Library != probes.MPICHLib) {
			continue
		}
		switch err := k.countIn(t); {
		case err == nil:
			k.done[key] = true
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
	}
	return nil
}

// countIn attaches the call counter to the MPI C functions of one file.
func (k *live) countIn(t probes.Target) error {
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
	return nil
}

// regs returns the registers of every thread of the watched processes.
func (k *live) regs() ([]bpf.MpiprobeTaskRegs, error) {
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
func (k *live) calls() (map[int]uint64, error) {
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
