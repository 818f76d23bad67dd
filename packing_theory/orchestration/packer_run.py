"""One packer's measurement at its horizon: :class:`PackerRun`, the per-packer result of every report
(``docs/schemas/packer-run.schema.json``), made by :func:`~packing_theory.orchestration.measure.measure`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..audit.costs import PackerCosts
from ..audit.documents import DocumentTable
from ..audit.results import Aggregates
from ..audit.untrained import HorizonStatement, NeverTrained

__all__ = ["PackerRun"]


@dataclass(frozen=True)
class PackerRun:
    """One packer's measurement at its horizon: the one per-packer result of every report."""

    packer: str
    kind: str
    framework: str
    row_width: int
    seq_length: int
    options: dict[str, Any]
    in_family: bool
    verdict: str
    trainer_view: str
    horizon: HorizonStatement
    aggregates: Aggregates
    never_trained: NeverTrained
    costs: PackerCosts
    start_delays: str = "measured"
    """``"measured"``, or why start delays are not waits here (an offline peer's emission order)."""
    documents: DocumentTable | None = None
    sources: Any = None
    """The per-source figures (:class:`~packing_theory.orchestration.sources.PackerSources`) when asked."""
    seconds: float = 0.0

    @property
    def row_positions(self) -> int:
        """Row positions emitted: complete rows times the width, plus the unfinished row."""
        return self.aggregates.rows * self.row_width + self.aggregates.partial_row_tokens

    @property
    def utilization(self) -> float | None:
        """Emitted document tokens per row position (padding and repeats lower it)."""
        return self.aggregates.mass.emitted_tokens / self.row_positions if self.row_positions else None

    def to_dict(self) -> dict[str, Any]:
        """The per-packer JSON of every report (``docs/schemas/packer-run.schema.json``)."""
        agg = self.aggregates.to_dict()
        for key in ("policy", "capacity", "stop_reason", "partial_row_tokens", "exhausted_at_row"):
            agg.pop(key, None)  # said once, in horizon and row_width
        return {
            "packer": self.packer,
            "kind": self.kind,
            "framework": self.framework,
            "row_width": self.row_width,
            "seq_length": self.seq_length,
            "options": self.options,
            "in_family": self.in_family,
            "verdict": self.verdict,
            "trainer_view": self.trainer_view,
            "horizon": self.horizon.to_dict(),
            "never_trained": self.never_trained.to_dict(),
            "row_positions": self.row_positions,
            "utilization": self.utilization,
            **agg,
            "costs": self.costs.to_dict(),
            "start_delays": self.start_delays,
            "data_sources": None if self.sources is None else self.sources.to_dict(),
            "seconds": round(self.seconds, 3),
        }
