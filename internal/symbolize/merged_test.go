package symbolize

import (
	"os"
	"slices"
	"testing"

	"golang.org/x/arch/x86/x86asm"

	"github.com/mpiprobe/mpiprobe/internal/x86"
)

// mergedSource has one function whose two calls gcc -O2 merges into one
// call instruction (cross-jumping), and loops and plain branches whose
// calls must not be taken for merged ones.
const mergedSource = `#include <stdlib.h>
extern void recv(void *b, int n, int t, int peer, int tag, void *comm, void *st);
extern void done(void);
int rank;
char comm[8];

int merged(void)
{
	int count = 4, *buf;
	char status[24];
	buf = calloc(count, sizeof(int));
	if (rank == 0) {
		buf[0] = 1;
		recv(buf, count, 7, 1, 0, comm, status);
	} else if (rank == 1) {
		buf[0] = 2;
		recv(buf, count, 7, 0, 0, comm, status);
	}
	free(buf);
	done();
	return 0;
}

void loop(int *buf, int n)
{
	for (int i = 0; i < n; i++)
		recv(buf, 4, 7, i, 0, comm, buf + 8);
}

void whileloop(int *buf)
{
	int peer = 1;
	while (buf[0] != 3) {
		recv(buf, 4, 7, peer, 0, comm, buf + 8);
		peer = buf[1];
	}
}

void two(int *buf)
{
	if (rank == 0)
		recv(buf, 4, 7, 1, 5, comm, buf);
	else
		recv(buf + 1, 8, 9, 0, 5, comm, buf);
}

int main(int argc, char **argv)
{
	int buf[16] = {0};
	merged();
	loop(buf, argc);
	whileloop(buf);
	two(buf);
	return 0;
}
`

const recvSource = `void recv(void *b, int n, int t, int peer, int tag, void *comm, void *st)
{
	__asm__ volatile("" ::: "memory");
}

void done(void)
{
	__asm__ volatile("" ::: "memory");
}
`

// TestMergedLines: the call gcc merged names both source lines; no other
// call site of the program names any other line.
func TestMergedLines(t *testing.T) {
	bin := build(t, "gcc", []string{"-g", "-O2", "-fno-inline"}, map[string]string{"prog.c": mergedSource, "recv.c": recvSource})
	f, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	o := newObject(f)
	defer o.close()
	syms, err := o.ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	var recv uint64
	for _, s := range syms {
		if s.Name == "recv" {
			recv = s.Value
		}
	}
	got := map[string][][]int{}
	for _, s := range syms {
		if !slices.Contains([]string{"merged", "loop", "whileloop", "two", "main"}, s.Name) {
			continue
		}
		code := make([]byte, s.Size)
		if !o.readCode(s.Value, code) {
			t.Fatalf("read %s", s.Name)
		}
		for off := 0; off < len(code); {
			in, err := x86.Decode(code[off:])
			if err != nil {
				t.Fatalf("%s+%#x: %v", s.Name, off, err)
			}
			pc := s.Value + uint64(off)
			off += in.Len
			if to, ok := x86.BranchTarget(in, pc); ok && in.Op == x86asm.CALL && to == recv {
				site := o.site(s.Value + uint64(off))
				got[s.Name] = append(got[s.Name], append([]int{site.Line}, site.AlsoLines...))
			}
		}
	}
	if len(got["merged"]) != 1 {
		t.Fatalf("gcc left %d calls of recv in merged, want 1 (the precondition of this test): %v", len(got["merged"]), got["merged"])
	}
	if lines := slices.Sorted(slices.Values(got["merged"][0])); !slices.Equal(lines, []int{14, 17}) {
		t.Errorf("merged call names lines %v, want 14 and 17", lines)
	}
	for fn, sites := range got {
		if fn == "merged" {
			continue
		}
		for _, s := range sites {
			if len(s) > 1 {
				t.Errorf("%s: call at line %d names other lines %v", fn, s[0], s[1:])
			}
		}
	}
}
