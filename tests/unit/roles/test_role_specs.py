# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every role's meta/argument_specs.yml matches its defaults/main.yml, and its README names
every variable, so the three cannot drift apart."""
import os

import pytest
import yaml

ROLES_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles")
ROLES = sorted(d for d in os.listdir(ROLES_DIR) if os.path.isdir(os.path.join(ROLES_DIR, d)))


def _load(role, *parts):
    with open(os.path.join(ROLES_DIR, role, *parts)) as handle:
        return yaml.safe_load(handle) or {}


def test_roles_found():
    assert set(ROLES) >= {"gpu_preflight", "host_tuning", "housekeeping", "cuda_stack", "vllm_server"}


@pytest.mark.parametrize("role", ROLES)
def test_spec_matches_defaults(role):
    defaults = _load(role, "defaults", "main.yml")
    options = _load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert sorted(options) == sorted(defaults)
    for name, spec in options.items():
        value = defaults[name]
        if isinstance(value, str) and "{{" in value:
            continue  # a default derived from another role's variable; documented in the README
        assert spec.get("default") == value, name
        assert spec.get("description"), name
        assert spec.get("type"), name


@pytest.mark.parametrize("role", ROLES)
def test_readme_names_every_variable(role):
    with open(os.path.join(ROLES_DIR, role, "README.md")) as handle:
        readme = handle.read()
    for name in _load(role, "defaults", "main.yml"):
        assert "`%s`" % name in readme, "%s/README.md does not document %s" % (role, name)


@pytest.mark.parametrize("role", ROLES)
def test_entry_points_name_only_known_variables(role):
    specs = _load(role, "meta", "argument_specs.yml")["argument_specs"]
    defaults = _load(role, "defaults", "main.yml")
    for entry, spec in specs.items():
        assert set(spec.get("options", {})) <= set(defaults), entry
