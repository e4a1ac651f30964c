"""The loop's side of the memory (DESIGN.md, Memory): open it from the settings, ask the search
which technique to apply next, gather contrastive pairs and the chosen technique's worked example
for the prompt, and learn from every measured attempt (the store keeps it, the reasoning graph
back-propagates its speedup)."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chromadb.api.types import Documents, EmbeddingFunction
from pydantic import BaseModel, ConfigDict

from kernelwright.agent.kinds import kind_of
from kernelwright.agent.settings import Settings
from kernelwright.memory import contrastive, worked
from kernelwright.memory.embeddings import CodeHashEmbedding, OllamaEmbedding
from kernelwright.memory.graph_file import SavedGraph
from kernelwright.memory.mcgs import Step, backpropagate, select
from kernelwright.memory.reasoning import ReasoningGraph, state_key
from kernelwright.memory.shipped import shipped
from kernelwright.memory.signature import op_class, task_signature
from kernelwright.memory.store import ChromaStore, EpisodeStore, Provenance
from kernelwright.memory.techniques import catalogue, resolve
from kernelwright.tools.results import Attempt, ProfileResult
from kernelwright.tools.task import Task


class TechniqueChoice(BaseModel):
    """What the search chose for one candidate, with the edge's statistics at that moment."""

    model_config = ConfigDict(frozen=True)
    tag: str
    bottleneck: str
    state: tuple[str, ...]  # the techniques the kernel it starts from already has
    attempts: int  # measured attempts on this edge before (the prior not counted)
    visits: float  # UCT's n: attempts plus the prior's pseudo-count
    success_rate: float
    mean_log_speedup: float
    attempt: int = 0  # the candidate it was chosen for, once measured

    @property
    def line(self) -> str:
        seen = f"{self.attempts} measured" if self.attempts else "prior only"
        return (
            f"{self.tag} for {self.bottleneck} ({seen}: {self.visits:g} visits, "
            f"{self.success_rate:.0%} success, mean log-speedup {self.mean_log_speedup:+.3f})"
        )


@dataclass
class Memory:
    store: EpisodeStore
    graph: SavedGraph

    def close(self) -> None:
        close = getattr(self.store, "close", None)
        if close is not None:
            close()


def embedding_for(settings: Settings) -> EmbeddingFunction[Documents]:
    """The embedding function the settings name ("hash" or "ollama:MODEL")."""
    spec = settings.memory.embedding
    if spec.startswith("ollama:"):
        return OllamaEmbedding(settings.ollama_base_url, spec.removeprefix("ollama:"))
    return CodeHashEmbedding()


def open_store(settings: Settings) -> ChromaStore:
    """The store the settings name; StoreUnavailable or EmbeddingUnavailable with the fix."""
    embedding = embedding_for(settings)
    if settings.memory.embedding != "hash":
        embedding(["__global__ void probe() {}"])  # fail now, in one line, not mid-run
    return ChromaStore.open(settings.memory_dir, settings.memory.url, embedding)


def open_memory(settings: Settings, enabled: bool | None = None) -> Memory | None:
    """The store and the reasoning graph, or None when the memory is off."""
    if not (settings.memory.enabled if enabled is None else enabled):
        return None
    return Memory(open_store(settings), SavedGraph.in_dir(settings.memory_dir))


def bottleneck_of(profile: ProfileResult | None) -> str:
    return profile.bottleneck if profile is not None and profile.available else "unknown"


def known_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """The model's tags with the catalogue's spelling where it knows them, the rest kept."""
    out: list[str] = []
    for tag in tags:
        name = resolve(tag) or tag.strip()
        if name and name not in out:
            out.append(name)
    return tuple(out)


def edge_tag(tags: Sequence[str], choice: TechniqueChoice | None) -> str:
    """The one technique an attempt is credited with in the graph: the search's choice if
    the candidate names it (or names nothing), else the first catalogue tag it names."""
    known = [t for t in tags if t in catalogue()]
    if choice is not None and (choice.tag in known or not tags):
        return choice.tag
    return known[0] if known else ""


def choose(
    graph: ReasoningGraph,
    applied: Sequence[str],
    bottleneck: str,
    tried: Sequence[str],
    source: str = "",
    op: str = "",
) -> TechniqueChoice | None:
    """The search's next technique (UCT over the graph) among those that can apply to this
    kernel (its source and op class), preferring one this run has not tried yet from the same
    kernel; None when every such technique is applied."""
    cannot = {t.tag for t in catalogue().values() if not t.applies(source, op)}
    tag = select(graph, applied, bottleneck, skip={*tried, *cannot}) or select(
        graph, applied, bottleneck, skip=cannot
    )
    if tag is None:
        return None
    stats = graph.peek(applied, tag, bottleneck)
    return TechniqueChoice(
        tag=tag,
        bottleneck=bottleneck,
        state=state_key(applied),
        attempts=stats.attempts,
        visits=stats.visits,
        success_rate=stats.success_rate,
        mean_log_speedup=stats.mean_log_speedup,
    )


def technique_view(choice: TechniqueChoice) -> dict[str, Any]:
    """The propose prompt's `technique`."""
    t = catalogue()[choice.tag]
    return {
        "tag": t.tag,
        "name": t.name,
        "when": t.when,
        "pitfalls": t.pitfalls,
        "bottleneck": choice.bottleneck,
        "attempts": choice.attempts,
        "success_rate": choice.success_rate,
        "mean_speedup": math.exp(choice.mean_log_speedup),
    }


def pairs_for(
    store: EpisodeStore,
    task: Task,
    bottleneck: str,
    source: str,
    attempts: Sequence[Attempt],
    k: int,
    max_chars: int,
) -> list[contrastive.ContrastivePair]:
    """Contrastive pairs for the current best kernel, this run's first, within the budget;
    only pairs in the task's own format (CUDA kernels, or KernelBench ModelNew files)."""
    if k <= 0:
        return []
    python = kind_of(task).fence == "python"
    found = contrastive.pairs(
        store,
        task_signature=task_signature(task),
        op_class=op_class(task),
        bottleneck=bottleneck,
        source=source,
        run_attempts=attempts,
        k=2 * k,  # some may be in the other format
    )
    same = [
        p for p in found if _is_python(p.faster.source) == python == _is_python(p.slower.source)
    ]
    return contrastive.within_budget(same[:k], max_chars)


def worked_example(
    store: EpisodeStore | None, task: Task, choice: TechniqueChoice, source: str, arch: str
) -> worked.WorkedExample | None:
    """The before/after pair to show for the search's choice: the best step this memory
    measured on a similar task, else a shipped one (see memory/worked.py); only pairs of the
    task's own kind."""
    stored = [] if store is None else worked.from_memory(store, choice.tag, task.kind, source)
    return worked.choose(
        stored,
        shipped(),
        technique=choice.tag,
        kind=task.kind,
        task_signature=task_signature(task),
        op_class=op_class(task),
        arch=arch,
    )


def _is_python(source: str) -> bool:
    """A KernelBench candidate (defines ModelNew) rather than a CUDA kernel."""
    return re.search(r"^class\s+ModelNew\b|^ModelNew\s*=", source, re.MULTILINE) is not None


def provenance(
    task: Task,
    bottleneck: str,
    arch: str,
    model: str,
    run_id: str,
    technique: str,
    applied: Sequence[str],
    parent_speedup: float,
) -> Provenance:
    return Provenance(
        task_signature=task_signature(task),
        op_class=op_class(task),
        bottleneck=bottleneck,
        arch=arch,
        model=model,
        run_id=run_id,
        technique=technique,
        state=state_key(applied),
        parent_speedup=parent_speedup,
        kind=task.kind,
        original_source=task.source,
    )


def path_steps(path: Sequence[dict[str, Any]]) -> list[Step]:
    """The kept chain from the original kernel, as the state keeps it (plain dicts)."""
    return [Step(tuple(p["state"]), p["tag"], p["bottleneck"], float(p["value"])) for p in path]


def step_dict(applied: Sequence[str], tag: str, bottleneck: str, best: float) -> dict[str, Any]:
    return {
        "state": list(state_key(applied)),
        "tag": tag,
        "bottleneck": bottleneck,
        "value": math.log(best),
    }


def learn(
    graph: SavedGraph,
    run_id: str,
    attempt: Attempt,
    path: Sequence[dict[str, Any]],
    step: dict[str, Any],
) -> bool:
    """Back-propagates a measured attempt along the kept chain (never below what each kept step
    achieved) and its own edge `step`, and saves the graph; False if the graph had learned this
    attempt already (a resumed run)."""
    if attempt.verdict == "correct":
        leaf: float | None = math.log(attempt.speedup) if attempt.speedup else step["value"]
    else:
        leaf = None
    steps = [*path_steps(path), *path_steps([step])]
    return graph.learn(run_id, attempt.index, lambda g: backpropagate(g, steps, leaf, kept=True))
