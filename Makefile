# Chronolog: the two commands that matter are `make up` (run it) and `make test` (test it).
SHELL := /bin/bash
NPM ?= npm
STAMP := node_modules/.install-stamp

.PHONY: install build chromium test test-embedded lint format up bench clean

# Install dependencies when package.json or the lock file changed.
$(STAMP): package.json package-lock.json $(wildcard packages/*/package.json services/*/package.json)
	$(NPM) ci --no-audit --no-fund
	@touch $(STAMP)

install: $(STAMP)

build: install
	npx tsc -b
	node services/cli/scripts/bundle.mjs --if-stale
	npx vite build services/web

lint: install
	npx biome check .

format: install
	npx biome check --write .

# The whole suite, the Kafka suites included: a local one-broker cluster is started for it
# (jars fetched by Maven on first use) and stopped afterwards, whatever the outcome. The
# EventStoreDB suites run against a stand-in server they start, or CHRONOLOG_EVENTSTORE_URL.
KAFKA_TEST_DIR := $(CURDIR)/infra/kafka/.data/make-test
# The browser tests drive Debian's Chromium: installed here when it is missing.
chromium:
	@if [ ! -x /usr/bin/chromium ]; then \
	  echo "installing chromium for the browser tests"; \
	  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

test: build lint chromium
	@set -e; \
	brokers=$$(CHRONOLOG_KAFKA_DIR=$(KAFKA_TEST_DIR) CHRONOLOG_KAFKA_PORT=29092 infra/kafka/start | tail -n 1); \
	trap 'CHRONOLOG_KAFKA_DIR=$(KAFKA_TEST_DIR) infra/kafka/stop >/dev/null 2>&1' EXIT; \
	echo "kafka for the tests: $$brokers"; \
	echo "eventstore for the tests: $${CHRONOLOG_EVENTSTORE_URL:-the stand-in server the suites start (CHRONOLOG_EVENTSTORE_URL=esdb://... for a real one)}"; \
	CHRONOLOG_KAFKA_BROKERS=$$brokers npx vitest run

# The suite without Kafka, for a quick local run.
test-embedded: build lint chromium
	npx vitest run --exclude 'packages/log-kafka/**' 

# `make up HTTP=127.0.0.1:9090` serves the API and the UI there (`HTTP=off`: none); ARGS are
# passed to `chronolog up` as they are: `make up ARGS="--workers 4 --grace 60"`.
HTTP ?=
ARGS ?=
up: build
	./node_modules/.bin/chronolog up --example $(if $(HTTP),--http $(HTTP)) $(ARGS)

bench: build
	$(NPM) run bench

clean:
	npx tsc -b --clean
	rm -rf node_modules packages/*/dist services/*/dist
