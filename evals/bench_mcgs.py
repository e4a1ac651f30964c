"""MCGS against random choice on a synthetic reward landscape (printed, not a timed test):

    python -m kernelwright.evals.bench_mcgs [--seeds 20]

Each seed hides a best set of 3 or 4 techniques from the catalogue. Its members help a little
alone and a lot together (speedups compound, pairs interact), so partial progress is visible
as real speedups are; two decoys look best alone but clash with the hidden set, a quarter of
the techniques slow the kernel down, and one breaks it (a wrong candidate). The landscape is
drawn from the seed alone: the catalogue's prior knows nothing about it. Both methods count
evaluations until they first measure the best set: MCGS counts every state it measures on the
way, random choice draws distinct valid sets of the full length.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass

from kernelwright.memory.mcgs import search
from kernelwright.memory.reasoning import ReasoningGraph, StateKey, state_key
from kernelwright.memory.techniques import BOTTLENECKS, Technique, catalogue


@dataclass(frozen=True)
class Landscape:
    gains: dict[str, float]  # log-speedup of each technique alone
    pairs: dict[frozenset[str], float]  # interactions, added when both are applied
    broken: frozenset[str]  # techniques whose candidates are wrong
    best: StateKey  # the fastest valid set of the full length
    candidates: list[StateKey]  # all valid sets of the full length

    def log_speedup(self, tags: StateKey) -> float | None:
        if self.broken & set(tags):
            return None
        alone = sum(self.gains[t] for t in tags)
        return alone + sum(
            self.pairs.get(frozenset(p), 0.0) for p in itertools.combinations(tags, 2)
        )

    def evaluate(self, sequence: tuple[str, ...]) -> float | None:
        log = self.log_speedup(state_key(sequence))
        return None if log is None else math.exp(log)


def valid(tags: StateKey, techniques: Mapping[str, Technique]) -> bool:
    """Every technique's prerequisites are in the set, so some order applies them all."""
    return all(set(techniques[t].requires) <= set(tags) for t in tags)


def landscape(seed: int, length: int, techniques: Mapping[str, Technique]) -> Landscape:
    rng = random.Random(seed)
    tags = sorted(techniques)
    sets = [c for c in itertools.combinations(tags, length) if valid(c, techniques)]
    hidden = rng.choice(sets)
    others = [t for t in tags if t not in hidden]
    rng.shuffle(others)
    decoys, broken, harmful = others[:2], others[2:3], others[3 : 3 + len(tags) // 4]
    gains = {t: rng.gauss(0.0, 0.04) for t in tags}
    gains.update({t: rng.uniform(0.04, 0.12) for t in hidden})
    gains.update({t: rng.uniform(0.12, 0.2) for t in decoys})
    gains.update({t: -rng.uniform(0.1, 0.3) for t in harmful})
    pairs = {
        frozenset(p): rng.gauss(0.0, 0.05)
        for p in itertools.combinations(tags, 2)
        if rng.random() < 0.1
    }
    pairs.update({frozenset(p): 0.12 for p in itertools.combinations(hidden, 2)})
    pairs.update({frozenset((d, h)): -0.15 for d in decoys for h in hidden})
    partial = Landscape(gains, pairs, frozenset(broken), hidden, sets)
    best = max(sets, key=lambda s: partial.log_speedup(s) or -math.inf)
    return Landscape(gains, pairs, frozenset(broken), best, sets)


def mcgs_evaluations(land: Landscape, bottleneck: str) -> int:
    """Evaluations until MCGS, starting from the catalogue prior, first measures the best set."""
    found: list[int] = []
    calls = 0

    def evaluate(sequence: tuple[str, ...]) -> float | None:
        nonlocal calls
        calls += 1
        if state_key(sequence) == land.best and not found:
            found.append(calls)
        return land.evaluate(sequence)

    target = land.evaluate(land.best) or 1.0
    budget = len(land.candidates)
    search(ReasoningGraph(), (), bottleneck, evaluate, budget, depth=len(land.best), until=target)
    return found[0] if found else budget


def random_evaluations(land: Landscape, seed: int) -> int:
    """Evaluations until distinct random valid sets of the full length hit the best one."""
    order = list(land.candidates)
    random.Random(seed + 1).shuffle(order)
    return order.index(land.best) + 1


def compare(seeds: range, lengths: tuple[int, ...] = (3, 4)) -> tuple[float, float]:
    """Mean evaluations to find the best set: (MCGS, random choice)."""
    techniques = catalogue()
    mcgs, rand = [], []
    for seed in seeds:
        land = landscape(seed, lengths[seed % len(lengths)], techniques)
        mcgs.append(mcgs_evaluations(land, BOTTLENECKS[seed % len(BOTTLENECKS)]))
        rand.append(random_evaluations(land, seed))
    return sum(mcgs) / len(mcgs), sum(rand) / len(rand)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    print(f"seeds: {args.seeds}, techniques: {len(catalogue())}; mean evaluations to find the best")
    print(f"{'sequence length':<16}{'MCGS':>9}{'random':>9}{'ratio':>8}")
    for lengths in [(3, 4), (3,), (4,)]:
        mcgs, rand = compare(range(args.seeds), lengths)
        label = " or ".join(map(str, lengths))
        print(f"{label:<16}{mcgs:9.1f}{rand:9.1f}{mcgs / rand:8.3f}")
    print("target: ratio <= 0.5")


if __name__ == "__main__":
    main()
