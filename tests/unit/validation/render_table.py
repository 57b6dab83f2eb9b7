# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The bad-input table of docs/security.md, rendered from bad_inputs.yml.

    python tests/unit/validation/render_table.py          # print the table
    python tests/unit/validation/render_table.py --write  # replace it in docs/security.md
test_bad_inputs.py::test_security_doc_table_is_the_sweep keeps the two equal."""

from __future__ import absolute_import, division, print_function

import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.normpath(os.path.join(HERE, "..", "..", "..", "docs", "security.md"))
BEGIN = "<!-- sweep table: rendered by tests/unit/validation/render_table.py from bad_inputs.yml -->"
END = "<!-- end of sweep table -->"
WHERE = {"spec": "argument spec of the entry point", "role": "the role's own check", "planner": "the planner (vllm_layout)"}
ENTRY = {"vllm_server": "plan"}


def _cell(value):
    text = json.dumps(value, ensure_ascii=True)
    return text.replace("|", "\\|")


def render(cases):
    lines = ["| case | role (entry point) | values tried | outcome | where |", "|---|---|---|---|---|"]
    for case in cases:
        values = ", ".join("`%s: %s`" % (k, _cell(v)) for k, v in sorted(case["vars"].items())) or "(defaults)"
        outcome = "accepted" if case.get("accepted") else "refused"
        where = "" if case.get("accepted") else WHERE[case["by"]]
        entry = ENTRY.get(case["role"], "validate")
        lines.append("| %s | %s (`%s`) | %s | %s | %s |" % (case["id"], case["role"], entry, values, outcome, where))
    refused = sum(1 for c in cases if not c.get("accepted"))
    lines.append("")
    lines.append("%d cases: %d refused, %d accepted." % (len(cases), refused, len(cases) - refused))
    return "\n".join(lines)


def load_cases():
    with open(os.path.join(HERE, "bad_inputs.yml")) as handle:
        return yaml.safe_load(handle)["cases"]


def doc_table(text):
    start = text.index(BEGIN) + len(BEGIN)
    return text[start:text.index(END)].strip("\n")


def main(argv):
    table = render(load_cases())
    if "--write" not in argv:
        print(table)
        return 0
    with open(DOC) as handle:
        text = handle.read()
    text = text.replace(doc_table(text), table) if doc_table(text) else text.replace(BEGIN, BEGIN + "\n" + table + "\n")
    with open(DOC, "w") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
