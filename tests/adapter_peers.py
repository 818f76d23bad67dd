"""Two small offline packers for the adapter tests: padding, filtering and repeated tokens.

The real peers (TRL, OLMo-core, Megatron, ...) live on other branches; these
two exercise every event an offline packer may emit so that the trainer
adapter is tested on them whatever is installed:

* ``FirstFitPadPeer`` — documents longer than ``R`` are :class:`Filtered`;
  the rest are packed first-fit-decreasing into bins, each emitted as a row
  padded to ``R`` (:class:`Padding`);
* ``OverlapChunkPeer`` — Megatron-like: the documents are concatenated and
  cut into rows; every row after the first starts with a :class:`Repeat` of
  the previous row's last token; the last row is padded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from packing_theory.engine.events import Arrival, Event, Filtered, Horizon, Padding, Placement, Repeat
from packing_theory.peers import PeerPacker, Piece, RowEmitter


class FirstFitPadPeer(PeerPacker):
    """First-fit decreasing into padded bins; over-capacity documents filtered."""

    name = "test-ffd-pad"
    framework = "tests"
    reference = "tests/adapter_peers.py"

    def events(self, lengths: Any) -> Iterator[Event]:
        R = self.capacity
        lengths = [int(n) for n in lengths]
        for occ, n in enumerate(lengths):
            yield Arrival(occ, occ, 0, n)
        keep = []
        for occ, n in enumerate(lengths):
            if n > R:
                yield Filtered(occ, occ, n, "over-capacity")
            else:
                keep.append(occ)
        bins: list[list[int]] = []
        room: list[int] = []
        for occ in sorted(keep, key=lambda o: (-lengths[o], o)):
            for b, free in enumerate(room):
                if lengths[occ] <= free:
                    bins[b].append(occ)
                    room[b] -= lengths[occ]
                    break
            else:
                bins.append([occ])
                room.append(R - lengths[occ])
        em = RowEmitter(R)
        for b in bins:
            yield from em.row([Piece(o, o, 0, lengths[o]) for o in b])
        yield Horizon(em.rows, 0, "exhausted", ())


class OverlapChunkPeer(PeerPacker):
    """Concatenate and cut rows that overlap by one repeated token (the last row is padded)."""

    name = "test-overlap"
    framework = "tests"
    reference = "tests/adapter_peers.py"
    repeats_tokens = True

    def events(self, lengths: Any) -> Iterator[Event]:
        R = self.capacity
        lengths = [int(n) for n in lengths]
        for occ, n in enumerate(lengths):
            yield Arrival(occ, occ, 0, n)
        stream = [(occ, p) for occ, n in enumerate(lengths) for p in range(n)]
        rows = 0
        i = 0
        last: tuple[int, int] | None = None
        while i < len(stream):
            pos = 0
            if last is not None:
                yield Repeat(rows, 0, last[0], last[0], last[1], 1)
                pos = 1
            take = stream[i : i + R - pos]
            i += len(take)
            j = 0
            while j < len(take):
                occ, start = take[j]
                k = j
                while k + 1 < len(take) and take[k + 1] == (occ, take[k][1] + 1):
                    k += 1
                n = k - j + 1
                whole = start == 0 and n == lengths[occ]
                yield Placement(rows, pos, occ, occ, start, n, False, not whole)
                pos += n
                j = k + 1
            if pos < R:
                yield Padding(rows, pos, R - pos)
            last = take[-1]
            rows += 1
        yield Horizon(rows, 0, "exhausted", ())


TEST_PEERS: dict[str, type[PeerPacker]] = {"test-ffd-pad": FirstFitPadPeer, "test-overlap": OverlapChunkPeer}
