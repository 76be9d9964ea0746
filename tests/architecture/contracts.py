"""An import-linter contract type of our own: no import cycle between any two modules.

import-linter's ``acyclic_siblings`` also refuses cycles between sibling *packages*
(``api.questions`` and ``api.categories`` rightly use each other's tables); what we forbid is a
cycle between *files*: module A imports B and B, directly or not, imports A. Found with Tarjan's
strongly connected components over grimp's graph (the one import-linter builds).
"""

from __future__ import annotations

from grimp import ImportGraph
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def module_cycles(graph: ImportGraph, roots: list[str]) -> list[list[str]]:
    """Every group of modules under ``roots`` that import each other in a cycle."""
    modules = sorted(
        m for m in graph.modules if any(m == r or m.startswith(r + ".") for r in roots)
    )
    inside = set(modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & inside) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(start: str) -> None:  # iterative Tarjan: no recursion limit on big graphs
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            successors = edges[node]
            if i < len(successors):
                work.append((node, i + 1))
                nxt = successors[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    cycles.append(sorted(group))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])

    for module in modules:
        if module not in index:
            visit(module)
    return sorted(cycles)


class AcyclicModulesContract(Contract):
    type_name = "acyclic_modules"

    roots = fields.ListField(subfield=fields.StringField())

    def check(self, graph: ImportGraph, verbose: bool) -> ContractCheck:
        roots: list[str] = list(self.roots)  # type: ignore[call-overload]
        cycles = module_cycles(graph, roots)
        return ContractCheck(kept=not cycles, metadata={"cycles": cycles})

    def render_broken_contract(self, check: ContractCheck) -> None:
        cycles: list[list[str]] = check.metadata["cycles"]
        for group in cycles:
            output.print_error(f"These modules import each other in a cycle: {', '.join(group)}")
            output.new_line()
