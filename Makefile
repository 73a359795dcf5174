# leasehold: build, run a local cluster, test, benchmark.
GO ?= go
BIN := bin/leasehold

.PHONY: all build cluster stop clean check test bench fmt vet chaos fuzz conformance

all: build

build:
	$(GO) build -o $(BIN) ./cmd/leasehold
	$(GO) build -o bin/leaseholdctl ./cmd/leaseholdctl

cluster:
	scripts/cluster.sh start
	@echo
	@echo "try: kubectl --kubeconfig $${LEASEHOLD_DATA:-data/cluster}/kubeconfig get leases -A"

stop:
	scripts/cluster.sh stop

clean:
	scripts/cluster.sh clean
	rm -rf bin

# The fast tier, after every change: vet, unit and in-process cluster tests
# (scripts/test.sh).
check:
	GO=$(GO) scripts/test.sh check

# The whole suite, as CI runs it: vet, every package with the race detector
# (the fast tier's first, then the browser and process-level tests), then
# Kubernetes' storage suites over the etcd API.
test:
	GO=$(GO) scripts/test.sh all

# Chaos suite (test/chaos): faults, workload, linearizability and watch
# checks. make chaos DURATION=10m CHAOS_SEED=123
DURATION ?= 10m
chaos:
	CHAOS_DURATION=$(DURATION) $(GO) test -count=1 -timeout 0 -run TestChaos ./test/chaos -v

# Native fuzzing: each target for FUZZTIME (make fuzz FUZZTIME=30s).
FUZZTIME ?= 30s
fuzz:
	@$(GO) test -list '^Fuzz' ./... | while read -r first pkg rest; do \
		case "$$first" in \
		Fuzz*) names="$$names $$first" ;; \
		ok) for name in $$names; do \
			echo "fuzz: $$pkg $$name"; \
			$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg </dev/null || exit 1; \
		done; names= ;; \
		FAIL) exit 1 ;; \
		esac; \
	done

# Throughput and latency of a fresh local cluster (see scripts/bench.sh).
bench:
	scripts/bench.sh

# Kubernetes' storage test suites over the etcd v3 API (see scripts/conformance.sh):
# a fresh three-node leasehold by default, TARGET=etcd for a three-member etcd.
conformance:
	scripts/conformance.sh

fmt:
	@files=$$(git ls-files '*.go'); \
	if [ -n "$$files" ]; then gofmt -l -w $$files; fi

vet:
	$(GO) vet ./...
