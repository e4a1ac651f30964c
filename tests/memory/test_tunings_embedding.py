"""The tunings collection is opened with the store's own embedding, never the one Chroma
recorded with it (which it would rebuild from what was stored: an embedding server's old
address, or its default that downloads a model)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from chromadb.api.types import Documents, Embeddings

from kernelwright.memory.embeddings import CodeHashEmbedding
from kernelwright.memory.store import ChromaStore
from kernelwright.memory.tunings import TuneMemory, TuneRecord


class Counting(CodeHashEmbedding):
    """The store's embedding, counting what it embeds."""

    seen: ClassVar[list[str]] = []

    def __call__(self, input: Documents) -> Embeddings:
        Counting.seen.extend(input)
        return super().__call__(input)


def test_a_tune_is_embedded_by_the_stores_own_embedding(tmp_path: Path) -> None:
    ChromaStore.open(tmp_path / "mem").close()  # made once, as on a first run
    Counting.seen = []
    with ChromaStore.open(tmp_path / "mem", embedding=Counting()) as store:
        TuneMemory(store).add(
            "__global__ void tuned_kernel() {}",
            [TuneRecord(task_signature="t", op_class="o", arch="sm_90", run_id="r")],
        )
    assert "__global__ void tuned_kernel() {}" in Counting.seen
