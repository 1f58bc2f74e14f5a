"""The weight of a run's samples per leaf instruction, kept beside its Profile.

A Profile aggregates frames per source line, so two instructions of one line are one
frame. LeafCosts keeps, per (object file, instruction address, leaf function), the
weight of the samples whose innermost frame was there: the column perf annotate and
pprof's disassembly show. The address is the binary's own virtual address (as objdump
prints it), so it matches the instructions read from the binary. Readers that see no
sample addresses (folded stacks, counting runs, perf script) keep none.

Kept as one document per run (KIND "leaf_costs").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .documents import Upgrade


@dataclass
class LeafCosts:
    KIND: ClassVar[str] = "leaf_costs"
    NAME: ClassVar[str] = "samples"
    VERSION: ClassVar[int] = 1
    UPGRADES: ClassVar[Sequence[Upgrade]] = ()

    dsos: list[str] = field(default_factory=list)  # object file paths, indexed by `dso`
    functions: list[str] = field(default_factory=list)  # leaf names, indexed by `function`
    dso: list[int] = field(default_factory=list)
    address: list[int] = field(default_factory=list)
    function: list[int] = field(default_factory=list)
    weight: list[float] = field(default_factory=list)

    @classmethod
    def build(cls, weights: dict[tuple[str, int, str], float]) -> LeafCosts:
        """From (dso path, address, leaf function) -> weight, in address order."""
        kept = sorted(item for item in weights.items() if item[1])
        dsos = sorted({dso for (dso, _, _), _ in kept})
        functions = sorted({fn for (_, _, fn), _ in kept})
        dso_at = {name: i for i, name in enumerate(dsos)}
        function_at = {name: i for i, name in enumerate(functions)}
        return cls(
            dsos=dsos,
            functions=functions,
            dso=[dso_at[dso] for (dso, _, _), _ in kept],
            address=[address for (_, address, _), _ in kept],
            function=[function_at[fn] for (_, _, fn), _ in kept],
            weight=[weight for _, weight in kept],
        )

    def of_function(self, function: str) -> dict[int, float]:
        """address -> weight of the samples whose leaf frame is FUNCTION."""
        if function not in self.functions:
            return {}
        wanted = self.functions.index(function)
        out: dict[int, float] = {}
        for fn, address, weight in zip(self.function, self.address, self.weight, strict=True):
            if fn == wanted:
                out[address] = out.get(address, 0.0) + weight
        return out

    def __len__(self) -> int:
        return len(self.weight)

    def to_json(self) -> dict[str, Any]:
        return {
            "dsos": self.dsos,
            "functions": self.functions,
            "dso": self.dso,
            "address": self.address,
            "function": self.function,
            "weight": self.weight,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LeafCosts:
        return cls(**{key: list(data.get(key, [])) for key in cls().to_json()})
