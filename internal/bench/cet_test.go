package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cilium/ebpf/link"
)

// endbrLib is a function whose body, past its endbr64 when built with
// -DCET, begins with push %rbx, an instruction the kernel emulates at a
// uprobe. It is written in assembly: a compiler would emit a leaf's lea
// first, which the kernel single-steps too.
const endbrLib = `
#ifdef CET
#define ENDBR "endbr64\n"
#else
#define ENDBR ""
#endif
__asm__(".text\n.globl step\n.type step,@function\nstep:\n" ENDBR
	"push %rbx\nlea 1(%rdi),%eax\npop %rbx\nret\n.size step,.-step\n");
`

// endbrDriver calls step from the library it dlopens n times and prints
// the loop's seconds of CPU, user and system: a uprobe hit is the
// process's system time, and the CPU time leaves out the waits for a CPU
// that wall time takes in on a machine shared with other runs.
const endbrDriver = `
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
	int (*step)(int) = (int (*)(int))dlsym(h, "step");
	long n = atol(argv[2]);
	struct timespec a, b;
	int x = 0;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	for (long i = 0; i < n; i++) x = step(x);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	printf("flood seconds=%.9f\n", (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9);
	return x == n ? 0 : 1;
}
`

// endbrIters is the length of endbrDriver's loop.
const endbrIters = 50000

// BenchmarkEndbrStep measures what a uprobe costs per hit on an endbr64,
// the first instruction of every function of a CET build (gcc
// -fcf-protection; here written by hand), against one on an instruction the kernel emulates:
// an empty program at the entry of the same function built without CET
// (push %rbx), at the entry of the CET build (endbr64) and past its
// endbr64 (push %rbx, where x86.EntryPoint puts it). No MPI: a C loop
// calling the function; see docs/cet.md.
func BenchmarkEndbrStep(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	dir := b.TempDir()
	cc := func(args ...string) {
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			b.Fatalf("gcc %v: %v\n%s", args, err, out)
		}
	}
	src, drv := filepath.Join(dir, "step.c"), filepath.Join(dir, "driver.c")
	if err := os.WriteFile(src, []byte(endbrLib), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(drv, []byte(endbrDriver), 0o644); err != nil {
		b.Fatal(err)
	}
	plain, cet, driver := filepath.Join(dir, "libplain.so"), filepath.Join(dir, "libcet.so"), filepath.Join(dir, "driver")
	common := []string{"-O2", "-fPIC", "-shared"}
	cc(append(common, "-o", plain, src)...)
	cc(append(common, "-DCET", "-o", cet, src)...)
	cc("-O2", "-o", driver, drv, "-ldl")
	objs := loadObjects(b)
	names := []string{"no probe (no CET)", "no probe (CET)", "empty uprobe at entry, no CET: push", "empty uprobe at entry, CET: endbr64", "empty uprobe past endbr64, CET: push"}
	libs := []string{plain, cet, plain, cet, cet}
	t := runPerCall(b, names, endbrIters, rotated, func(v int) float64 {
		if v >= 2 {
			ex, err := link.OpenExecutable(libs[v])
			if err != nil {
				b.Fatal(err)
			}
			opts := &link.UprobeOptions{}
			if v == 4 {
				opts.Offset = 4
			}
			l, err := ex.Uprobe("step", objs.Empty, opts)
			if err != nil {
				b.Fatalf("attach %s: %v", names[v], err)
			}
			defer l.Close()
		}
		return workloadSeconds(b, []string{driver, libs[v], strconv.Itoa(endbrIters)})
	})
	t.printTable("step(), 50k calls", t.addedColumn("added vs no probe"), spreadColumn(t))
	b.ReportMetric(t.us(3)-t.us(1), "µs-at-endbr64")
	b.ReportMetric(t.us(4)-t.us(1), "µs-past-endbr64")
}
