# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module_utils file is PRIVATE to the collection: only this collection's modules and
# module_utils import it, and its names may change at any time.
# Pure code: no Ansible imports, no I/O. Runs on Python 3.9 and later.
"""GPU-to-GPU links: the ``topo -m`` codes, their classes, their order and the NVLink islands.

The one home of these ideas: the ``topo -m`` parser and the facts merge (``link_class`` matrix,
``nvlink_islands``) and the layout planner (worst link of a TP group, islands of hand-written
facts) all classify links here.

``topo -m`` codes: ``X`` (self), ``NV<n>`` (n bonded NVLinks), ``PIX``, ``PXB``, ``PHB``,
``NODE``, ``SYS``; drivers before ~R384 print ``SOC`` for ``SYS``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

# topo -m code -> link_class. NV<n> is handled by pattern. SOC is the pre-R384 name of SYS.
LINK_CLASSES = {
    "X": "self",
    "PIX": "pix",
    "PXB": "pxb",
    "PHB": "phb",
    "NODE": "node",
    "SYS": "sys",
    "SOC": "sys",
}

#: Rank of a link class: lower is better. ``unknown`` = no topo -m cell for the pair.
LINK_RANK = {"self": 0, "nvlink": 1, "pix": 2, "pxb": 3, "phb": 4, "node": 5, "sys": 6, "unknown": 7}

_NV_RE = re.compile(r"^NV(\d+)$")


# --------------------------------------------------------------------------------------------
# One cell
# --------------------------------------------------------------------------------------------

def is_link_code(token: str) -> bool:
    """Is ``token`` a ``topo -m`` link code exactly as nvidia-smi prints it?"""
    return token in LINK_CLASSES or bool(_NV_RE.match(token))


def link_class(code: Any, unknown: Optional[str] = None) -> Optional[str]:
    """Map a ``topo -m`` cell to its class: self|nvlink|pix|pxb|phb|node|sys.

    Case and surrounding blanks do not matter, and a class name (``nvlink``, ``sys``) is its own
    class, so hand-written facts may use either. A missing (None) or unrecognised cell gives
    ``unknown``: None for the facts (JSON null), ``"unknown"`` for the planner's ranking.
    """
    if code is None:
        return unknown
    text = str(code).strip().upper()
    if _NV_RE.match(text):
        return "nvlink"
    if text in LINK_CLASSES:
        return LINK_CLASSES[text]
    low = text.lower()
    if low in LINK_RANK and low != "unknown":
        return low
    return unknown


def nvlink_width(code: Any) -> int:
    """Bonded NVLinks of an ``NV<n>`` cell (``NV12`` -> 12); 0 for any other cell."""
    match = _NV_RE.match(str(code).strip().upper())
    return int(match.group(1)) if match else 0


def link_order(code: Any, cls: str) -> Tuple[int, int]:
    """Sort key for 'worse' links: higher rank is worse; among NV#, fewer bonded links is worse."""
    return (LINK_RANK[cls], -nvlink_width(code))


# --------------------------------------------------------------------------------------------
# Matrices
# --------------------------------------------------------------------------------------------

def matrix_cell(matrix: Optional[Sequence], a: int, b: int) -> Any:
    """``matrix[a][b]``, or None where the matrix has no such cell (short rows, no row)."""
    if matrix is not None and a < len(matrix) and isinstance(matrix[a], (list, tuple)) and b < len(matrix[a]):
        return matrix[a][b]
    return None


def pair_class(links: Optional[Sequence], classes: Optional[Sequence], a: int, b: int) -> str:
    """Link class of the pair (a, b): the ``link_class`` cell where it names a class, else the
    class of the ``links`` code; ``unknown`` when neither matrix has the cell."""
    cls = matrix_cell(classes, a, b)
    if cls in LINK_RANK:
        return cls
    return link_class(matrix_cell(links, a, b), unknown="unknown")


def nvlink_islands(links: Sequence, classes: Optional[Sequence] = None,
                   gpus: Optional[Sequence[int]] = None) -> List[List[int]]:
    """Connected components of the GPU graph whose edges are NVLink cells; sorted, singletons kept.

    ``links`` is the GPU x GPU matrix of ``topo -m`` codes and ``classes`` (optional) the matching
    ``link_class`` matrix, which wins where it names a class (see ``pair_class``). ``gpus`` are the
    GPU indices (default: one per row of ``links``). A pair is joined when its cell in either
    direction is NVLink; a cell the matrices do not have joins nothing.
    """
    nodes = sorted(gpus) if gpus is not None else list(range(len(links)))
    parent: Dict[int, int] = dict((node, node) for node in nodes)

    def find(node):
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for a in nodes:
        for b in nodes:
            if a != b and pair_class(links, classes, a, b) == "nvlink":
                root_a, root_b = find(a), find(b)
                if root_a != root_b:
                    parent[max(root_a, root_b)] = min(root_a, root_b)
    groups: Dict[int, List[int]] = {}
    for node in nodes:
        groups.setdefault(find(node), []).append(node)
    return sorted(sorted(group) for group in groups.values())
