# mpiprobe: see README.md.
GO       ?= go
BIN      := bin/mpiprobe
DEB_PKGS := openmpi-bin libopenmpi-dev mpich libmpich-dev gfortran binutils clang llvm libbpf-dev linux-libc-dev gcc make

.PHONY: all build test generate check-generate deps demo bench fuzz vet clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/mpiprobe

# The tests: unit tests everywhere, and end-to-end tests that run real MPI
# jobs under mpiprobe (as root; MPIPROBE_E2E=require turns their skips into failures).
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 20m ./...

# Regenerate the BPF objects (needs clang, llvm-strip and libbpf headers).
generate:
	$(GO) generate ./bpf

# Fail when the committed BPF objects differ from what the sources generate.
check-generate: generate
	git diff --exit-code -- bpf/

# Debian packages the tests, the demo and generate need (as root).
deps:
	@missing=""; for p in $(DEB_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; \
	fi

# The bundled example: a job whose sender runs out of send fragments, under mpiprobe.
demo: deps build
	mkdir -p bin
	mpicc.openmpi -O2 -o bin/flood testdata/flood.c
	./$(BIN) -C 500 -T 1s -- mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 \
		--mca pml ob1 --mca btl self,vader --mca btl_vader_free_list_max 64 \
		bin/flood -n 2000 -d 600 -r 4

# Overhead of the probes, traced against untraced runs interleaved in one run (as root).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./bench/
	$(GO) test -run '^$$' -bench 'Compress|Analyze' -benchtime 3x ./loops/ ./traceview/

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseMaps -fuzztime 30s ./procfs/
	$(GO) test -run '^$$' -fuzz FuzzParseStat -fuzztime 30s ./procfs/
	$(GO) test -run '^$$' -fuzz FuzzParseEnviron -fuzztime 30s ./procfs/
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime 30s ./thresholds/
	$(GO) test -run '^$$' -fuzz FuzzParseEventSpec -fuzztime 30s ./thresholds/
	$(GO) test -run '^$$' -fuzz FuzzDiscover -fuzztime 30s ./probes/
	$(GO) test -run '^$$' -fuzz FuzzSites -fuzztime 30s ./elfcall/
	$(GO) test -run '^$$' -fuzz FuzzFindBuildID -fuzztime 30s ./probes/
	$(GO) test -run '^$$' -fuzz FuzzLoad -fuzztime 30s ./unwind/
	$(GO) test -run '^$$' -fuzz FuzzEhFrame -fuzztime 30s ./unwind/
	$(GO) test -run '^$$' -fuzz FuzzStack -fuzztime 30s ./unwind/
	$(GO) test -run '^$$' -fuzz FuzzDiagnose -fuzztime 30s ./hang/

clean:
	rm -rf bin
