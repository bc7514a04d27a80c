# retryaudit — run `make help` for the targets.
GO       ?= go
BIN      := bin/retryaudit
FUZZTIME ?= 4s
FUZZLONG ?= 3m
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: help build demo test test-live record-live lint vet fmt-check fuzz fuzz-long bench bench-scale seed-stability samples samples-node samples-hotrod samples-caddy samples-traefik golden clean

## help: list the targets
help:
	@awk -F': ' '/^## /{sub(/^## /,""); split($$0,a,": "); printf "  %-10s %s\n", a[1], substr($$0, length(a[1])+3)}' $(MAKEFILE_LIST)

## build: build bin/retryaudit
build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/retryaudit

## demo: audit the committed samples: prints the report, writes report.html and report.md
demo: build
	./$(BIN) audit samples/mixed/traces.otlp.jsonl.gz --html report.html --md report.md

## test: gofmt check, go vet, all tests, then a short pass of every fuzz target
test: lint
	$(GO) test ./...
	cd samples/generator && $(GO) test ./...
	$(MAKE) --no-print-directory fuzz

JAEGER_VERSION ?= v1.76.0
JAEGER_CACHE   := $(CURDIR)/.cache/jaeger

## test-live: build Jaeger v2 from its Go module (once; cached in .cache/), audit the samples through it
test-live:
	@bin=$$(scripts/build-jaeger.sh $(JAEGER_VERSION) $(JAEGER_CACHE)) && \
	RETRYAUDIT_JAEGER=$$bin $(GO) test -tags live -run '^TestLiveJaeger$$' -count 1 -v ./cmd/retryaudit/

## record-live: test-live, also re-recording the Jaeger responses the unit tests replay
record-live:
	rm -rf ingest/remote/testdata/jaeger-$(JAEGER_VERSION)
	$(MAKE) --no-print-directory test-live RETRYAUDIT_RECORD=$(CURDIR)/ingest/remote/testdata/jaeger-$(JAEGER_VERSION)

## lint: gofmt check and go vet (the tool's module and the samples generator)
lint: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	$(GO) vet -tags live ./cmd/retryaudit/
	cd samples/generator && $(GO) vet ./...

## fuzz: run every fuzz target for FUZZTIME each (default 4s)
fuzz:
	@GO=$(GO) scripts/fuzz.sh $(FUZZTIME)

## fuzz-long: run every fuzz target for FUZZLONG each (default 3m per target)
fuzz-long:
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZLONG)

## bench: run the benchmarks (figures in README.md)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./...

## bench-scale: infer on 1M and 10M spans as whole processes (minutes, 4.3 GB of temporary disk)
bench-scale:
	RETRYAUDIT_BENCH_SCALE=1 $(GO) test -run '^$$' -bench InferScale -benchtime 1x -timeout 60m ./cmd/retryaudit

## seed-stability: audit every committed sample with first seeds 1, 2 and 3 and require one recommendation (about half an hour of CPU)
seed-stability:
	RETRYAUDIT_SEED_STABILITY=1 $(GO) test -run '^TestRecommendationSameForSeeds$$' -count 1 -timeout 180m -v ./replay/audit

## samples: regenerate the sample traces (runs a real instrumented mesh on 127.0.0.1)
samples:
	cd samples/generator && $(GO) run . -out ..

## samples-hotrod: regenerate samples/hotrod by running Jaeger's HotROD demo itself (built from the Jaeger module, cached in .cache/)
samples-hotrod:
	@bin=$$(scripts/build-jaeger.sh $(JAEGER_VERSION) $(JAEGER_CACHE) examples/hotrod) && \
	cd samples/generator && $(GO) run . -out .. -hotrod $$bin

## samples-caddy: regenerate samples/caddy-replicas: Caddy v2 embedded (module samples/generator/caddy, built into .cache/) retrying across 3 replicas
samples-caddy:
	cd samples/generator/caddy && $(GO) build -o $(CURDIR)/.cache/caddymesh .
	cd samples/generator && $(GO) run . -out .. -caddy $(CURDIR)/.cache/caddymesh

## samples-traefik: regenerate graph/testdata/traefik-replicas: a proxy that retries, balances and traces as Traefik v3.7.13 does (samples/generator/traefik.go; Traefik itself does not build here) across 3 replicas
samples-traefik:
	cd samples/generator && $(GO) run . -out ../../graph/testdata -traefik

## samples-node: regenerate the Node.js samples (needs node >= 20.6 and npm; npm ci in each samples/generator/node/*)
samples-node:
	cd samples/generator/node && npm ci --no-audit --no-fund
	cd samples/generator && $(GO) run . -out .. -node all

## golden: rewrite golden files from the current output
golden:
	$(GO) test ./... -update

clean:
	rm -rf bin
