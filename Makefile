# mpiprobe: see README.md.
GO       ?= go
BIN      := bin/mpiprobe
DEB_PKGS := openmpi-bin libopenmpi-dev mpich libmpich-dev gfortran binutils clang llvm libbpf-dev linux-libc-dev gcc make prometheus systemd util-linux libibverbs1 time debootstrap shellcheck

# Where install puts things. DESTDIR stages into another root (packaging,
# tests): then nothing is done to the running system.
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR   = $(PREFIX)/bin
DOCDIR  ?= $(PREFIX)/share/doc/mpiprobe
UNITDIR ?= /etc/systemd/system
CONFDIR ?= /etc/mpiprobe

.PHONY: all build test generate check-generate deps demo readme bench fuzz vet clean install uninstall chaos soak

all: build

build:
	$(GO) build -o $(BIN) ./cmd/mpiprobe

# The tests: unit tests everywhere, and end-to-end tests that run real MPI
# jobs under mpiprobe (as root; MPIPROBE_E2E=require turns their skips into failures).
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 70m ./...

# The chaos suite (as root): real jobs with faults injected at random
# moments from a printed seed (CHAOS_SEED repeats a run); see
# docs/robustness.md. CI runs a short form (.ci/run).
CHAOS_ROUNDS   ?= 20
CHAOS_ATTACHES ?= 100
CHAOS_SEED     ?=
chaos:
	MPIPROBE_E2E=require MPIPROBE_CHAOS_ROUNDS=$(CHAOS_ROUNDS) MPIPROBE_CHAOS_ATTACHES=$(CHAOS_ATTACHES) MPIPROBE_CHAOS_SEED=$(CHAOS_SEED) \
		$(GO) test -count=1 -run '^TestChaos$$' -v -timeout 120m ./cmd/mpiprobe/

# The soak (as root, not in CI): the agent through SOAK_JOBS short jobs in
# a row and one long job of 16 ranks for SOAK_MINUTES, sampling its RSS,
# CPU, file descriptors and state files from /proc; see docs/robustness.md.
SOAK_JOBS    ?= 1000
SOAK_MINUTES ?= 30
soak:
	MPIPROBE_E2E=require MPIPROBE_SOAK_JOBS=$(SOAK_JOBS) MPIPROBE_SOAK_MINUTES=$(SOAK_MINUTES) \
		$(GO) test -count=1 -run '^TestSoak$$' -v -timeout 0 ./cmd/mpiprobe/

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

# Rewrite the README's example blocks from real runs (as root); the test
# without MPIPROBE_README=update checks them.
readme: deps
	MPIPROBE_README=update $(GO) test -count=1 -run '^TestReadmeExamples$$' ./cmd/mpiprobe/

# Overhead of the probes, traced against untraced runs interleaved in one run (as root).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./internal/bench/
	$(GO) test -run '^$$' -bench 'Compress|Analyze' -benchtime 3x ./internal/trace/loops/ ./internal/trace/traceview/
	$(GO) test -run '^$$' -bench 'ReadShared' -benchtime 3x ./internal/report/
	$(GO) test -run '^$$' -bench 'Merge' -benchtime 3x ./internal/status/

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseMaps -fuzztime 30s ./internal/procfs/
	$(GO) test -run '^$$' -fuzz FuzzParseStat -fuzztime 30s ./internal/procfs/
	$(GO) test -run '^$$' -fuzz FuzzParseEnviron -fuzztime 30s ./internal/procfs/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 30s ./internal/config/
	$(GO) test -run '^$$' -fuzz FuzzEncode -fuzztime 30s ./internal/journal/
	$(GO) test -run '^$$' -fuzz FuzzFileName -fuzztime 30s ./internal/jobstore/
	$(GO) test -run '^$$' -fuzz FuzzExpand -fuzztime 30s ./internal/hostlist/
	$(GO) test -run '^$$' -fuzz FuzzReadPart -fuzztime 30s ./internal/report/
	$(GO) test -run '^$$' -fuzz FuzzShow -fuzztime 30s ./internal/text/
	$(GO) test -run '^$$' -fuzz FuzzParseEventSpec -fuzztime 30s ./thresholds/
	$(GO) test -run '^$$' -fuzz FuzzDiscover -fuzztime 30s ./internal/discover/
	$(GO) test -run '^$$' -fuzz FuzzEntryPoint -fuzztime 30s ./internal/x86/
	$(GO) test -run '^$$' -fuzz FuzzSites -fuzztime 30s ./internal/elfx/
	$(GO) test -run '^$$' -fuzz FuzzFindBuildID -fuzztime 30s ./internal/elfx/
	$(GO) test -run '^$$' -fuzz FuzzStructFields -fuzztime 30s ./internal/elfx/
	$(GO) test -run '^$$' -fuzz FuzzInferFreeList -fuzztime 30s ./internal/layout/
	$(GO) test -run '^$$' -fuzz '^FuzzAnalyze$$' -fuzztime 30s ./internal/layout/
	$(GO) test -run '^$$' -fuzz '^FuzzInferOMPI$$' -fuzztime 30s ./internal/layout/
	$(GO) test -run '^$$' -fuzz '^FuzzInferOB1$$' -fuzztime 30s ./internal/layout/
	$(GO) test -run '^$$' -fuzz '^FuzzObjectStores$$' -fuzztime 30s ./internal/layout/
	$(GO) test -run '^$$' -fuzz '^FuzzInferMPICH$$' -fuzztime 30s ./internal/layout/
	$(GO) test -run '^$$' -fuzz FuzzArgHomes -fuzztime 30s ./internal/layout/
	$(GO) test -run '^$$' -fuzz FuzzLoad -fuzztime 30s ./internal/status/unwind/
	$(GO) test -run '^$$' -fuzz FuzzEhFrame -fuzztime 30s ./internal/status/unwind/
	$(GO) test -run '^$$' -fuzz FuzzStack -fuzztime 30s ./internal/status/unwind/
	$(GO) test -run '^$$' -fuzz FuzzDiagnose -fuzztime 30s ./internal/status/hang/
	$(GO) test -run '^$$' -fuzz FuzzLabel -fuzztime 30s ./internal/identity/
	$(GO) test -run '^$$' -fuzz FuzzCompress -fuzztime 30s ./internal/trace/loops/
	$(GO) test -run '^$$' -fuzz '^FuzzRead$$' -fuzztime 30s ./internal/trace/tracefile/
	$(GO) test -run '^$$' -fuzz FuzzDamage -fuzztime 30s ./internal/trace/tracefile/

# The binary, the agent's systemd unit (dist/mpiprobe.service with the paths
# filled in) and README.md; the sample configuration only where none is yet,
# so that an admin's config.conf is never overwritten.
install: build
	install -d -m 0755 "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(UNITDIR)" "$(DESTDIR)$(DOCDIR)"
	install -m 0755 $(BIN) "$(DESTDIR)$(BINDIR)/mpiprobe"
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' dist/mpiprobe.service > bin/mpiprobe.service
	install -m 0644 bin/mpiprobe.service "$(DESTDIR)$(UNITDIR)/mpiprobe.service"
	install -m 0644 README.md "$(DESTDIR)$(DOCDIR)/README.md"
	@if [ ! -f internal/config/testdata/config.conf ]; then \
		echo "no internal/config/testdata/config.conf: the agent runs with its defaults until $(CONFDIR)/config.conf exists"; \
	elif [ -e "$(DESTDIR)$(CONFDIR)/config.conf" ]; then \
		echo "kept the existing $(DESTDIR)$(CONFDIR)/config.conf"; \
	else \
		echo "install -m 0640 internal/config/testdata/config.conf $(DESTDIR)$(CONFDIR)/config.conf"; \
		install -d -m 0755 "$(DESTDIR)$(CONFDIR)" && \
		install -m 0640 internal/config/testdata/config.conf "$(DESTDIR)$(CONFDIR)/config.conf"; \
	fi
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemctl daemon-reload && echo "enable with: systemctl enable --now mpiprobe"; \
	elif [ -z "$(DESTDIR)" ]; then \
		echo "systemd is not running here: start the agent by hand with $(BINDIR)/mpiprobe agent (as root)"; \
	else \
		echo "staged in $(DESTDIR); on the target machine: systemctl daemon-reload && systemctl enable --now mpiprobe"; \
	fi

# Stops the agent, removes its BPF pins (which keep its probes attached
# after it exits), the binary, the unit and README.md. The configuration
# and the state (job summaries) are kept. The pins are removed only on the
# live system (a staged DESTDIR tree has none), and `|| true` because a
# failure there (nothing pinned, a binary without --cleanup) must not stop
# the rest of the uninstall.
uninstall:
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then \
		systemctl disable --now mpiprobe.service || true; \
	fi
	@if [ -z "$(DESTDIR)" ] && [ -x "$(BINDIR)/mpiprobe" ]; then \
		"$(BINDIR)/mpiprobe" agent --cleanup || true; \
	fi
	rm -f "$(DESTDIR)$(BINDIR)/mpiprobe" "$(DESTDIR)$(UNITDIR)/mpiprobe.service" "$(DESTDIR)$(DOCDIR)/README.md"
	rmdir "$(DESTDIR)$(DOCDIR)" 2>/dev/null || true
	@if [ -z "$(DESTDIR)" ] && [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
	@echo "kept $(DESTDIR)$(CONFDIR)/config.conf and $(DESTDIR)/var/lib/mpiprobe (job summaries);"
	@echo "remove them with: rm -rf $(DESTDIR)$(CONFDIR) $(DESTDIR)/var/lib/mpiprobe"

clean:
	rm -rf bin
