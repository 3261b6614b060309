# Chronolog: the two commands that matter are `make up` (run it) and `make test` (test it).
SHELL := /bin/bash
NPM ?= npm
STAMP := node_modules/.install-stamp

.PHONY: install build test lint format up bench clean

# Install dependencies when package.json or the lock file changed.
$(STAMP): package.json package-lock.json $(wildcard packages/*/package.json services/*/package.json)
	$(NPM) ci --no-audit --no-fund
	@touch $(STAMP)

install: $(STAMP)

build: install
	npx tsc -b

lint: install
	npx biome check .

format: install
	npx biome check --write .

test: build lint
	npx vitest run

up: build
	./node_modules/.bin/chronolog up --example

bench: build
	$(NPM) run bench

clean:
	npx tsc -b --clean
	rm -rf node_modules packages/*/dist services/*/dist
