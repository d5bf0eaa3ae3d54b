# The two commands a newcomer needs are `make run` and `make test`; they
# work on a machine that has only Go. Everything else is fetched into
# ./.tools on first use.

GO        ?= go
DATA      ?= ./data
TOOLS     := $(CURDIR)/.tools
SPECTRAL  := $(TOOLS)/node_modules/.bin/spectral
SPECTRAL_VERSION := 6.16.3
# The kiosk's browser tests drive Debian's chromium with playwright-core
# and check accessibility with axe-core, both from npm into ./.tools.
PLAYWRIGHT := $(TOOLS)/node_modules/playwright-core
PLAYWRIGHT_VERSION := 1.65.1
AXE_VERSION := 4.14.1
# Generated clients run against a real svc-cloud (make clients, issue 19):
# oapi-codegen (through the Go proxy) generates a Go client; openapi-typescript
# generates TypeScript types, tsc compiles a flow against them and Node runs
# it with openapi-fetch (all three from npm into ./.tools).
OAPI_CODEGEN_VERSION := v2.8.2
OPENAPI_TS_VERSION := 7.13.0
TYPESCRIPT_VERSION := 5.9.3
OPENAPI_FETCH_VERSION := 0.17.0
OPENAPI_FETCH := $(TOOLS)/node_modules/openapi-fetch/package.json
# The AsyncAPI CLI validates the MQTT protocol's document (issue 19).
ASYNCAPI_VERSION := 6.2.0
# Every npm install resolves the tools' dependencies as the registry stood
# on this day (npm's --before), not as it stands: their ranges are loose,
# and a registry (a mirror, or npm on a bad day) can list a package's new
# version before the new version of a package it needs, which failed CI
# (the AsyncAPI CLI wanted @aws-sdk/credential-provider-http@^3.972.88
# where the registry had 3.972.87). Move it forward with the versions.
NPM_BEFORE := 2026-11-20
ASYNCAPI_DIR := $(TOOLS)/asyncapi
ASYNCAPI := $(ASYNCAPI_DIR)/node_modules/.bin/asyncapi

.PHONY: run run-cloud run-edge test vet tidy-check lint unit lint-openapi clients lint-asyncapi build cross bench clean image image-test prometheus dashboard-check

BIN       := $(TOOLS)/bin

# The demo edge is enrolled by code, as an installer enrols an appliance:
# svc-edge enrol shows a code (and serves it on its status page), svc-cloud
# edges claim reads it there and claims it through the API with the demo's
# secret key, and the edge writes $(DATA)/edge.json. Later runs reuse it.
CLOUD_URL ?= http://127.0.0.1:8080
ENROL = [ -f $(DATA)/edge.json ] || { \
	  $(BIN)/svc-edge enrol --cloud $(CLOUD_URL) --data $(abspath $(DATA))/edge --config $(DATA)/edge.json \
	    --kiosk-listen 127.0.0.1:8088 & enrol=$$!; \
	  $(BIN)/svc-cloud edges claim --appliance http://127.0.0.1:8081 --api $(CLOUD_URL) --data $(DATA) --name "Demo edge" \
	    || { kill $$enrol; exit 1; }; \
	  wait $$enrol || exit 1; }

## run: start the cloud API (SQLite under ./data, embedded MQTT broker) with a demo organisation, and one demo edge with simulated relays, enrolled by code
# On Ctrl-C or a kill of make, the trap stops the children it started, by
# PID, waits for them (svc-cloud drains for --drain-delay first) and exits
# 0. It must not be `kill 0`: that signals the shell itself too, which runs
# the trap again, recursing until dash overflows its stack ("Segmentation
# fault"), and it signals make and anything else in the process group.
# The PIDs are in $(DATA)/svc-cloud.pid and svc-edge.pid, to stop one half
# alone (the README's outage: kill $$(cat data/svc-cloud.pid)).
PIDS = $(DATA)/svc-cloud.pid $(DATA)/svc-edge.pid
run: $(BIN)/svc-cloud $(BIN)/svc-edge
	@pids=; enrol=; \
	trap 'trap "" INT TERM; kill $$pids $$enrol 2>/dev/null; wait; rm -f $(PIDS); exit 0' INT TERM; \
	(umask 077; mkdir -p $(DATA)); \
	$(BIN)/svc-cloud serve --data $(DATA) --demo --webhooks-allow-loopback & pids=$$!; echo $$! > $(DATA)/svc-cloud.pid; \
	$(ENROL); \
	$(BIN)/svc-edge run --config $(DATA)/edge.json --simulate & pids="$$pids $$!"; echo $$! > $(DATA)/svc-edge.pid; \
	wait

## run-cloud, run-edge: the two halves of make run, one per terminal (stop and start either alone; run-edge enrols the edge the first time, with run-cloud serving)
run-cloud: $(BIN)/svc-cloud
	$(BIN)/svc-cloud serve --data $(DATA) --demo --webhooks-allow-loopback

run-edge: $(BIN)/svc-cloud $(BIN)/svc-edge
	@$(ENROL); \
	$(BIN)/svc-edge run --config $(DATA)/edge.json --simulate

# Always rebuilt (go build is a no-op when nothing changed).
.PHONY: $(BIN)/svc-cloud $(BIN)/svc-edge
$(BIN)/svc-cloud $(BIN)/svc-edge:
	$(GO) build -o $(BIN)/ ./$(if $(findstring cloud,$@),cloud,edge)/cmd/$(notdir $@)

## test: vet, go.mod tidy, staticcheck, every test (PostgreSQL and Mosquitto suites when SVC_TEST_* are set), OpenAPI lint, generated Go and TypeScript clients run against svc-cloud, AsyncAPI lint, cross-builds, the image booted under qemu (skipped without qemu and Debian's image tools); ends with the tests that were skipped and why
test: vet tidy-check lint browser-tools unit lint-openapi clients lint-asyncapi cross image-test
	@cat $(SKIPPED)/unit.txt $(SKIPPED)/image-test.txt 2>/dev/null || true

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...
	cd firmware-images && $(GO) vet ./...

## tidy-check: fails when go mod tidy would change go.mod or go.sum, in the root module or in firmware-images (issue 19)
tidy-check:
	@for dir in . firmware-images; do \
	  echo "go mod tidy -diff ($$dir)"; \
	  (cd $$dir && $(GO) mod tidy -diff) || { echo "go.mod or go.sum in $$dir is not tidy: run go mod tidy there"; exit 1; }; \
	done

## lint: staticcheck (its default checks: docs/decisions.md, "Lint and tidy") on both modules, installed through the Go proxy into ./.tools
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(TOOLS)/staticcheck-$(STATICCHECK_VERSION)/staticcheck
lint: $(STATICCHECK)
	$(STATICCHECK) ./...
	cd firmware-images && $(STATICCHECK) ./...

$(STATICCHECK):
	GOBIN=$(dir $@) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

# The tests run under go test -json, read back by shared/testsummary: it
# prints what plain go test prints (image-test: -v) and then which tests
# were skipped and why, with the line that runs the PostgreSQL and
# Mosquitto suites; make test prints both lists again at its end. The
# exit status is go test's or, failing that, the summariser's.
SKIPPED := $(TOOLS)/skipped
TESTSUMMARY := $(BIN)/testsummary
.PHONY: $(TESTSUMMARY)
$(TESTSUMMARY):
	@mkdir -p $(SKIPPED)
	$(GO) build -o $@ ./shared/testsummary

# GO_TEST_JSON runs go test -json with the arguments given and pipes it
# through the summariser, which writes its list of skipped tests to the
# file given.
GO_TEST_JSON = rc=$$(mktemp); \
	{ $(GO) test -json $(1); echo $$? >$$rc; } | $(TESTSUMMARY) $(2); sum=$$?; \
	code=$$(cat $$rc); rm -f $$rc; [ "$$code" = 0 ] && [ "$$sum" = 0 ]

# The QR tests read passes back with zbarimg (Debian's zbar-tools), an
# independent decoder, found on PATH unless SVC_TEST_ZBARIMG names it.
# The metrics tests lint scrapes with promtool: the one .ci/run extracts
# into .tools/prometheus, else promtool on PATH.
# UNIT_PKGS narrows the packages (make unit UNIT_PKGS=./cloud/postgres).
UNIT_PKGS ?= ./...
unit: $(TESTSUMMARY)
	@echo "go test -json -count=1 -timeout 15m $(UNIT_PKGS) | testsummary"
	@export SVC_TEST_ZBARIMG="$${SVC_TEST_ZBARIMG:-$$(command -v zbarimg || true)}" \
	SVC_TEST_CHROMIUM="$${SVC_TEST_CHROMIUM:-$$(command -v chromium || true)}" \
	SVC_TEST_PROMTOOL="$${SVC_TEST_PROMTOOL:-$(wildcard $(PROMETHEUS_DIR)/usr/bin/promtool)}" \
	SVC_TEST_NODE_MODULES="$${SVC_TEST_NODE_MODULES:-$(if $(wildcard $(PLAYWRIGHT)),$(TOOLS)/node_modules)}" \
	SVC_TESTDATA="$${SVC_TESTDATA:-$(firstword $(wildcard $(CURDIR)/../shared/testdata /work/shared/testdata))}"; \
	$(call GO_TEST_JSON,-count=1 -timeout 15m $(UNIT_PKGS),-o $(SKIPPED)/unit.txt)

## lint-openapi: lint the OpenAPI document with Spectral (spectral:oas), installed from npm into ./.tools
lint-openapi: $(SPECTRAL)
	@if [ -x $(SPECTRAL) ]; then \
	  echo "spectral lint cloud/httpapi/openapi.json"; \
	  $(SPECTRAL) lint --fail-severity=warn --ruleset .spectral.yaml cloud/httpapi/openapi.json; \
	fi

# Without npm (a machine with only Go) the lint is skipped with a warning;
# CI (SVC_TEST_REQUIRE_SERVICES=1) has npm and fails without it.
$(SPECTRAL):
	@if ! command -v npm >/dev/null; then \
	  if [ "$$SVC_TEST_REQUIRE_SERVICES" = 1 ]; then echo "npm is needed to fetch Spectral"; exit 1; fi; \
	  echo "warning: npm not found, OpenAPI lint skipped (apt-get install npm to run it)"; \
	  exit 0; \
	fi; \
	mkdir -p $(TOOLS) && npm install --silent --no-audit --no-fund --before=$(NPM_BEFORE) --prefix $(TOOLS) @stoplight/spectral-cli@$(SPECTRAL_VERSION)

## clients: generated clients against a real server: starts svc-cloud serve --demo (SQLite in a temporary folder, free ports), fetches its GET /v1/openapi.json, generates a Go client with oapi-codegen (cloud/httpapi/testdata/goclient) and TypeScript types with openapi-typescript (--default-non-nullable=false: docs/decisions.md, "The OpenAPI document for generated clients"), compiles cloud/httpapi/testdata/typescript with tsc --strict, and runs each one's flow (create a visit, check it in, read its event and two problems); the TypeScript half is skipped with a warning without npm
clients: $(BIN)/svc-cloud $(OPENAPI_FETCH)
	$(GO) run ./cloud/httpapi/clientcheck -cloud $(BIN)/svc-cloud -go $(GO) -oapi-codegen $(OAPI_CODEGEN_VERSION) \
	  $$([ -f $(OPENAPI_FETCH) ] && echo -node-modules $(TOOLS)/node_modules)

# Skipped with a warning without npm, required by CI, like Spectral.
$(OPENAPI_FETCH):
	@if ! command -v npm >/dev/null; then \
	  if [ "$$SVC_TEST_REQUIRE_SERVICES" = 1 ]; then echo "npm is needed to fetch openapi-typescript, typescript and openapi-fetch"; exit 1; fi; \
	  echo "warning: npm not found, the TypeScript client is skipped (apt-get install npm to run it)"; \
	  exit 0; \
	fi; \
	mkdir -p $(TOOLS) && npm install --silent --no-audit --no-fund --before=$(NPM_BEFORE) --save-exact --prefix $(TOOLS) \
	  openapi-typescript@$(OPENAPI_TS_VERSION) typescript@$(TYPESCRIPT_VERSION) openapi-fetch@$(OPENAPI_FETCH_VERSION)

## lint-asyncapi: validate the MQTT protocol's AsyncAPI 3 document (sync/protocol/asyncapi.yaml) with the AsyncAPI CLI, installed from npm into ./.tools/asyncapi
# The document stays at AsyncAPI 3.0.0, which more generators read than
# 3.1.0, so the CLI's note that 3.1.0 exists is suppressed. At run time the
# CLI reaches no network: its analytics are off through the config file it
# reads (ASYNCAPI_METRICS_CONFIG_PATH; CI=true turns them off too), its
# update check off (ASYNCAPI_SKIP_NEW_VERSION_CHECK), and node-config's
# warnings about the CLI's own NODE_ENV silenced.
ASYNCAPI_ENV := ASYNCAPI_METRICS_CONFIG_PATH=$(ASYNCAPI_DIR)/analytics.json ASYNCAPI_SKIP_NEW_VERSION_CHECK=true \
	NODE_CONFIG_DIR=$(ASYNCAPI_DIR)/config SUPPRESS_NO_CONFIG_WARNING=1 SUPPRESS_STRICTNESS_CHECK=1
lint-asyncapi: $(ASYNCAPI)
	@if [ -x $(ASYNCAPI) ]; then \
	  printf '%s\n' '{"analyticsEnabled":"false","infoMessageShown":"true","userID":"none"}' >$(ASYNCAPI_DIR)/analytics.json; \
	  echo "asyncapi validate sync/protocol/asyncapi.yaml"; \
	  $(ASYNCAPI_ENV) $(ASYNCAPI) validate sync/protocol/asyncapi.yaml --fail-severity warn --suppressWarnings asyncapi-latest-version; \
	fi

# Skipped with a warning without npm, required by CI, like Spectral. The
# CLI is large (about 440 MB in 1,270 packages, a minute to install), so it
# has a folder of its own: installing the other tools does not re-resolve
# its tree. Its install scripts are not run: one adds shell completion to
# the user's profile, another reports the install. It declares Node 24 but
# validates on Debian's Node 20.
$(ASYNCAPI):
	@if ! command -v npm >/dev/null; then \
	  if [ "$$SVC_TEST_REQUIRE_SERVICES" = 1 ]; then echo "npm is needed to fetch the AsyncAPI CLI"; exit 1; fi; \
	  echo "warning: npm not found, AsyncAPI validation skipped (apt-get install npm to run it)"; \
	  exit 0; \
	fi; \
	mkdir -p $(ASYNCAPI_DIR) && \
	npm install --silent --no-audit --no-fund --before=$(NPM_BEFORE) --ignore-scripts --prefix $(ASYNCAPI_DIR) @asyncapi/cli@$(ASYNCAPI_VERSION)

## browser-tools: playwright-core and axe-core from npm into ./.tools, for the kiosk's browser tests (skipped with a warning without npm; CI requires them)
.PHONY: browser-tools
browser-tools: $(PLAYWRIGHT)

$(PLAYWRIGHT):
	@if ! command -v npm >/dev/null; then \
	  if [ "$$SVC_TEST_REQUIRE_SERVICES" = 1 ]; then echo "npm is needed to fetch playwright-core"; exit 1; fi; \
	  echo "warning: npm not found, the kiosk's browser tests are skipped (apt-get install npm chromium to run them)"; \
	  exit 0; \
	fi; \
	mkdir -p $(TOOLS) && npm install --silent --no-audit --no-fund --before=$(NPM_BEFORE) --prefix $(TOOLS) playwright-core@$(PLAYWRIGHT_VERSION) axe-core@$(AXE_VERSION)

## prometheus: Prometheus and promtool from Debian's prometheus package, unpacked into ./.tools/prometheus (not installed: installing starts a server)
PROMETHEUS_DIR := $(TOOLS)/prometheus
PROMETHEUS := $(PROMETHEUS_DIR)/usr/bin/prometheus
prometheus: $(PROMETHEUS)

# apt-get download runs as the _apt user, which must be able to write the
# folder it downloads into.
$(PROMETHEUS):
	@deb_dir=$$(mktemp -d) && chmod 0777 "$$deb_dir" && \
	{ (cd "$$deb_dir" && { apt-get download -q prometheus >/dev/null 2>&1 || \
	    { apt-get update -q >/dev/null && apt-get download -q prometheus >/dev/null; }; }) || \
	  { echo "cannot download Debian's prometheus package with apt-get"; rm -rf "$$deb_dir"; exit 1; }; } && \
	mkdir -p $(PROMETHEUS_DIR) && dpkg-deb -x "$$deb_dir"/prometheus_*.deb $(PROMETHEUS_DIR) && rm -rf "$$deb_dir" && \
	echo "unpacked Debian's prometheus package into $(PROMETHEUS_DIR)"

## dashboard-check: the Grafana dashboard (docs/grafana/svc.json) against a real scrape: starts make run's processes on free ports in a temporary folder, Prometheus scraping them for DASHBOARD_SCRAPE (default 75s) while API requests and gate scans run, then evaluates every query of the dashboard and fails on one that does not parse or has no data; DASHBOARD_SCREENSHOT=docs/screenshots/grafana-dashboard.png also draws its panels into that PNG with chromium
DASHBOARD_SCRAPE ?= 75s
dashboard-check: $(BIN)/svc-cloud $(BIN)/svc-edge $(PROMETHEUS)
	$(GO) run ./docs/grafana/dashcheck -cloud $(BIN)/svc-cloud -edge $(BIN)/svc-edge -prometheus $(PROMETHEUS) \
	  -scrape $(DASHBOARD_SCRAPE) $(if $(DASHBOARD_SCREENSHOT),-screenshot $(DASHBOARD_SCREENSHOT))

## build: static binaries into ./bin
build:
	CGO_ENABLED=0 $(GO) build -o bin/ ./cloud/cmd/... ./edge/cmd/...

## cross: everything builds without cgo for the appliances' arm64 and armv7
cross:
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build ./...
	CGO_ENABLED=0 GOOS=linux GOARCH=arm GOARM=7 $(GO) build ./...

## image: the appliance's disk image (issue 18), arm64 for qemu, into firmware-images/build/svc-qemu.img; CLOUD=https://... writes the cloud's URL into svc.txt on its boot partition (editable later); RELEASE_KEYS=KEY[,KEY] the release keys it trusts (none: it does not update); VERSION=1.2.0 (default: git describe); IMAGE_TARGET=rpi for the Raspberry Pi variant (untested on hardware; fetches Debian's u-boot-rpi:arm64 with apt). Needs squashfs-tools dosfstools mtools e2fsprogs fdisk u-boot-tools (firmware-images/README.md)
IMAGE_TARGET ?= qemu
image:
	CLOUD=$(CLOUD) RELEASE_KEYS=$(RELEASE_KEYS) $(if $(VERSION),VERSION=$(VERSION)) firmware-images/mkimage.sh $(IMAGE_TARGET)

## image-test: boots the qemu image under qemu-system-aarch64 (Debian's qemu-system-arm, u-boot-qemu) against a svc-cloud on the host: enrolment code on the console and status page, claimed, online, a pass admitted at a gate, an update that commits and a broken one that rolls back; and builds the Pi image (skipped without the tools; CI requires them)
image-test: $(TESTSUMMARY)
	@echo "cd firmware-images && go test -json -count=1 -timeout 15m -v ./imagetest | testsummary -v"
	@cd firmware-images && $(call GO_TEST_JSON,-count=1 -timeout 15m -v ./imagetest,-v -o $(SKIPPED)/image-test.txt)

## bench: load-test GET and POST /teams, POST /visits and check-in on SQLite and PostgreSQL beside a bare echo handler (needs wrk); BENCH_AGAINST=DIR (a work tree of another commit) instead measures POST /v1/visits against that tree in interleaved rounds, with the ratio's 95% interval
bench:
	cloud/bench/bench.sh

## bench-edge: edge and sync figures (issue 4): svc-edge's size, gate decisions, cloud → edge propagation, svc-edge's memory and cold start, drain of 100,000 queued facts (PostgreSQL and Mosquitto when SVC_TEST_POSTGRES_URL and SVC_TEST_MQTT_URL are set)
.PHONY: bench-edge
bench-edge:
	cloud/bench/edge.sh

## bench-webhooks: webhook deliveries per second (1 and 2 dispatchers, 8 and 16 workers) and change-to-first-attempt delay at 20 and 100 visits/s, SQLite and PostgreSQL (when SVC_TEST_POSTGRES_URL is set), the receiver on 127.0.0.1
.PHONY: bench-webhooks
bench-webhooks:
	$(GO) run ./cloud/bench/webhooks $(BENCH_FLAGS)

## bench-attendance: 10,000 people's timesheets from a month of punches (about 436,000): the time to build them, RecordPunch's cost one at a time and 8 at once, and GET /v1/timesheet-periods and /v1/timesheets latency; SQLite, then PostgreSQL (SVC_TEST_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/test); BENCH_STORES narrows, BENCH_FLAGS adds flags (-trace-sql, -people, -requests, ...)
BENCH_STORES ?= sqlite postgres
.PHONY: bench-attendance
bench-attendance:
	@for s in $(BENCH_STORES); do \
	  echo "== bench-attendance -store $$s"; \
	  $(GO) run ./cloud/bench/attendance -store $$s $(BENCH_FLAGS) || exit 1; \
	done

## bench-kiosk: the reception kiosk (issue 16) on an appliance with 100,000 cached visits and 10,000 people: person search, every kiosk page (in the process and over loopback), a walk-in from submit to badge, the welcome screen's weight; 3 runs. BENCH_FLAGS adds flags (-runs, -requests, -only, -cpuprofile, ...); GOMAXPROCS=1 make bench-kiosk for one core
.PHONY: bench-kiosk
bench-kiosk:
	$(GO) run ./cloud/bench/kiosk $(BENCH_FLAGS)

## bench-image: the appliance image (issue 18) under qemu-system-aarch64 (TCG): its size raw and compressed, the root slot's and what is in it, boot to the first gate decision (3 boots of an appliance enrolled at a site of 100,000 visits) and memory after each boot; the tools of image-test, and xz and gzip
.PHONY: bench-image
bench-image:
	cd firmware-images && $(GO) test -count=1 -run '^$$' -bench Image -benchtime 1x -timeout 60m -v ./imagetest

clean:
	rm -rf bin $(TOOLS)
