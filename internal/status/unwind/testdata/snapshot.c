/*
 * snapshot.c: the subject of TestStackSnapshot (stack_snapshot_test.go).
 *
 * Built with gcc -O2 -fomit-frame-pointer -g0. main calls level1, level2,
 * level3; level3 sorts an array with libc's qsort, whose comparison
 * callback compare is the innermost frame. On its first call compare
 * captures its own rip, rsp and rbp with inline asm and writes, into the
 * directory given as argv[1]:
 *
 *   regs.txt   "ip 0x...\nsp 0x...\nbp 0x...\n"
 *   stack.bin  the bytes from rsp up to the end of the mapping holding rsp
 *   maps.txt   the text of /proc/self/maps
 *   ref.txt    the return addresses glibc's backtrace() (libgcc's DWARF
 *              unwinder) finds from inside compare, one per line: an
 *              independent reference for the chain of return addresses
 *
 * The Go test then unwinds the snapshot offline, as mpiprobe unwinds a live
 * process, and compares.
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone))

static const char *outdir;
static int captured;
static void *ref[128];
static int nref;
static char maps[1 << 20];

static void die(const char *what)
{
	perror(what);
	exit(2);
}

static FILE *create(const char *name)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", outdir, name);
	FILE *f = fopen(path, "w");
	if (f == NULL)
		die(path);
	return f;
}

NOINLINE static void write_snapshot(uint64_t ip, uint64_t sp, uint64_t bp)
{
	/* Read the maps first: they tell how far the stack goes. */
	FILE *f = fopen("/proc/self/maps", "r");
	if (f == NULL)
		die("/proc/self/maps");
	size_t n = fread(maps, 1, sizeof maps - 1, f);
	fclose(f);
	maps[n] = 0;

	uint64_t end = 0;
	for (char *line = maps; *line;) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && lo <= sp && sp < hi)
			end = hi;
		char *nl = strchr(line, '\n');
		if (nl == NULL)
			break;
		line = nl + 1;
	}
	if (end == 0) {
		fprintf(stderr, "no mapping holds sp %#lx\n", (unsigned long)sp);
		exit(2);
	}

	f = create("regs.txt");
	fprintf(f, "ip %#lx\nsp %#lx\nbp %#lx\n", (unsigned long)ip,
		(unsigned long)sp, (unsigned long)bp);
	fclose(f);

	f = create("stack.bin");
	if (fwrite((void *)(uintptr_t)sp, 1, end - sp, f) != end - sp)
		die("write stack.bin");
	fclose(f);

	f = create("maps.txt");
	fputs(maps, f);
	fclose(f);

	f = create("ref.txt");
	for (int i = 0; i < nref; i++)
		fprintf(f, "%#lx\n", (unsigned long)(uintptr_t)ref[i]);
	fclose(f);
}

NOINLINE int compare(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (!captured) {
		uint64_t ip, sp, bp;
		captured = 1;
		__asm__ volatile("lea 0(%%rip), %0\n\t"
				 "mov %%rsp, %1\n\t"
				 "mov %%rbp, %2"
				 : "=r"(ip), "=r"(sp), "=r"(bp));
		/*
		 * ref[0] is the return address into compare, after the call
		 * to backtrace; ref[1] on are the same return addresses the
		 * unwinder must find from the captured registers.
		 */
		nref = backtrace(ref, sizeof ref / sizeof ref[0]);
		write_snapshot(ip, sp, bp);
	}
	return (x > y) - (x < y);
}

NOINLINE int level3(int n)
{
	int arr[64];
	int sum = 0;

	for (int i = 0; i < 64; i++)
		arr[i] = (i * 7919 + n) % 101;
	qsort(arr, 64, sizeof arr[0], compare);
	for (int i = 0; i < 64; i++)
		sum += arr[i] * i;
	return sum;
}

NOINLINE int level2(int n)
{
	volatile char pad[200];

	for (int i = 0; i < 200; i++)
		pad[i] = (char)(n + i);
	int r = level3(n + pad[3]);
	return r + pad[7];
}

NOINLINE int level1(int n)
{
	/* A variable-length array makes GCC keep a frame pointer here, even
	 * with -fomit-frame-pointer, and define the CFA from rbp. */
	volatile char vla[n + 16];

	for (int i = 0; i < n + 16; i++)
		vla[i] = (char)i;
	int r = level2(n + vla[n / 2]);
	return r + vla[1];
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s outdir\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	printf("%d\n", level1(argc + 40));
	return 0;
}
