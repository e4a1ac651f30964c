"""The episodic memory: what one process writes, another reads; old stores migrate on open."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import chromadb
import pytest
from chromadb.config import Settings

from kernelwright.memory import migrations
from kernelwright.memory.embeddings import CodeHashEmbedding, EmbeddingUnavailable, OllamaEmbedding
from kernelwright.memory.store import ChromaStore, StoreUnavailable
from kernelwright.tools.results import Attempt
from tests.conftest import chroma_open

NAIVE = """extern "C" __global__ void rowsum(const float* x, float* y, int n) {
    int row = blockIdx.x;
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) acc += x[row * n + i];
    y[row] = acc;
}"""
SHARED = """extern "C" __global__ void rowsum(const float* x, float* y, int n) {
    __shared__ float partial[256];
    int row = blockIdx.x, t = threadIdx.x;
    float acc = 0.0f;
    for (int i = t; i < n; i += blockDim.x) acc += x[row * n + i];
    partial[t] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) partial[t] += partial[t + s];
        __syncthreads();
    }
    if (t == 0) y[row] = partial[0];
}"""
WARP = """extern "C" __global__ void rowsum(const float* __restrict__ x, float* y, int n) {
    int row = blockIdx.x, lane = threadIdx.x;
    float acc = 0.0f;
    const float4* x4 = reinterpret_cast<const float4*>(x + row * n);
    for (int i = lane; i < n / 4; i += 32) { float4 v = x4[i]; acc += v.x + v.y + v.z + v.w; }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffff, acc, o);
    if (lane == 0) y[row] = acc;
}"""
GEMM = """extern "C" __global__ void matmul(const float* a, const float* b, float* c, int n) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, k = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) acc += a[r * n + i] * b[i * n + k];
    c[r * n + k] = acc;
}"""
WHERE = dict(
    task_signature="rowsum(f32[M,N])->f32[M]",
    op_class="reduction",
    bottleneck="memory-bound",
    arch="sm_90",
    model="qwen2.5-coder:7b",
)


def attempt(
    index: int,
    source: str,
    verdict: str = "correct",
    speedup: float | None = None,
    parent: int = 0,
    tags: tuple[str, ...] = (),
    reason: str = "ok",
) -> Attempt:
    return Attempt.model_validate(
        dict(
            index=index,
            parent=parent,
            tags=tags,
            source=source,
            verdict=verdict,
            reason=reason,
            speedup=speedup,
        )
    )


def fill(store: ChromaStore, run_id: str = "run1") -> None:
    store.add(
        attempt(1, SHARED, speedup=3.1, tags=("shared-memory", "tree-reduction")),
        run_id=run_id,
        **WHERE,
    )
    store.add(
        attempt(2, WARP, speedup=5.4, parent=1, tags=("warp-shuffle", "float4")),
        run_id=run_id,
        **WHERE,
    )
    store.add(
        attempt(
            3,
            WARP.replace("n / 4", "n"),
            "wrong",
            parent=2,
            tags=("float4",),
            reason="max abs err 3.2 at [7]",
        ),
        run_id=run_id,
        **WHERE,
    )


def test_add_search_and_metadata(tmp_path: Path) -> None:
    store = ChromaStore.open(tmp_path / "memory")
    fill(store)
    assert store.count() == 3
    hits = store.search(WARP, n=2)
    assert hits[0].id == "run1:2" and hits[0].speedup == pytest.approx(5.4)
    assert hits[0].tags == ("warp-shuffle", "float4") and hits[0].parent == "run1:1"
    assert hits[0].distance is not None and hits[0].distance < 1e-4
    wrong = store.search(WARP, n=5, where={"verdict": "wrong"})
    assert [h.id for h in wrong] == ["run1:3"] and wrong[0].speedup is None
    assert wrong[0].reason == "max abs err 3.2 at [7]"
    meta = store.collection.get(ids=["run1:3"])["metadatas"][0]  # type: ignore[index]
    assert meta["speedup"] == -1.0 and "speedup_log" not in meta
    assert all(isinstance(v, str | int | float | bool) for v in meta.values())


def _held(directory: Path) -> list[str]:
    """This process's descriptors on files under `directory`."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(directory)):
            found.append(target)
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads /proc/self/fd")
def test_close_lets_the_directory_go(tmp_path: Path) -> None:
    """A closed store holds none of its files: a process that opens many (the MCP server, a
    test run) does not run out of descriptors."""
    with ChromaStore.open(tmp_path / "memory") as store:
        fill(store)
        assert _held(tmp_path)  # the test can see what it claims is let go
    assert chroma_open() == []
    assert _let_go(tmp_path)
    store.close()  # again: nothing happens
    again = ChromaStore.open(tmp_path / "memory")
    assert again.count() == 3  # closed, not lost
    again.close()
    assert _let_go(tmp_path)


def _let_go(directory: Path, within_s: float = 10.0) -> bool:
    """Chroma's engine closes its files on its own threads, a few milliseconds after the last
    client closes: wait for that, not for ever."""
    end = time.monotonic() + within_s
    while _held(directory):
        if time.monotonic() > end:
            return False
        time.sleep(0.005)
    return True


def test_same_run_and_index_replaces(tmp_path: Path) -> None:
    store = ChromaStore.open(tmp_path)
    store.add(attempt(1, NAIVE, speedup=1.0), run_id="r", **WHERE)
    store.add(attempt(1, SHARED, speedup=3.0), run_id="r", **WHERE)
    assert store.count() == 1 and store.search(NAIVE, n=1)[0].source == SHARED


def test_second_process_sees_what_the_first_wrote(tmp_path: Path) -> None:
    fill(ChromaStore.open(tmp_path / "memory"))
    code = f"""
import chromadb, sys
from chromadb.config import Settings
from kernelwright.memory.store import ChromaStore, StoreUnavailable
store = ChromaStore.open({str(tmp_path / "memory")!r})
hit = store.search({WARP!r}, n=1)[0]
# the registered embedding lets plain Chroma reopen the collection too
client = chromadb.PersistentClient({str(tmp_path / "memory")!r},
                                   settings=Settings(anonymized_telemetry=False))
raw = client.get_collection("attempts").query(query_texts=[{SHARED!r}], n_results=1)
print(store.count(), hit.id, hit.speedup, raw["ids"][0][0])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["3", "run1:2", "5.4", "run1:1"]


def test_migrates_a_version_1_store(tmp_path: Path) -> None:
    client = chromadb.PersistentClient(str(tmp_path), settings=Settings(anonymized_telemetry=False))
    col = migrations.migrate(client, CodeHashEmbedding(), upto=1)
    assert migrations.schema_version(client) == 1
    col.add(
        ids=["old:1", "old:2"],
        documents=[SHARED, NAIVE],
        metadatas=[
            {"verdict": "correct", "speedup": 2.0, "tags": "shared-memory"},
            {
                "verdict": "wrong",
                "speedup": -1.0,
                "tags": "",
                "task_signature": "kernelbench:mlp()",
            },
        ],
    )
    store = ChromaStore.open(tmp_path)
    assert migrations.schema_version(store.client) == len(migrations.MIGRATIONS) >= 3
    metas = store.collection.get(ids=["old:1", "old:2"])["metadatas"]
    assert metas is not None
    assert metas[0]["speedup_log"] == pytest.approx(math.log(2.0))
    assert "speedup_log" not in metas[1]
    assert (metas[0]["kind"], metas[1]["kind"]) == ("cuda", "kernelbench")  # m003
    assert store.collection.metadata["description"]  # type: ignore[index]
    ChromaStore.open(tmp_path)  # idempotent: nothing left to apply
    assert migrations.schema_version(store.client) == len(migrations.MIGRATIONS)


def test_refuses_a_newer_schema(tmp_path: Path) -> None:
    store = ChromaStore.open(tmp_path)
    store.collection.modify(metadata={migrations.VERSION_KEY: 99})
    with pytest.raises(StoreUnavailable, match="newer than this kernelwright knows"):
        ChromaStore.open(tmp_path)


def test_export_import_round_trip(tmp_path: Path) -> None:
    a = ChromaStore.open(tmp_path / "a")
    fill(a)
    assert a.export_jsonl(tmp_path / "m.jsonl") == 3
    first = json.loads((tmp_path / "m.jsonl").read_text().splitlines()[0])
    assert set(first) == {"id", "source", "metadata"}
    b = ChromaStore.open(tmp_path / "b")
    b.add(
        attempt(1, SHARED, speedup=3.1, tags=("shared-memory", "tree-reduction")),
        run_id="run1",
        **WHERE,
    )
    added = b.import_jsonl(tmp_path / "m.jsonl")  # run1:1 was there already
    assert sorted(e.id for e in added) == ["run1:2", "run1:3"]
    assert b.import_jsonl(tmp_path / "m.jsonl") == []
    assert b.count() == 3 and b.stats() == a.stats()
    assert b.search(WARP, n=1)[0].id == "run1:2"


def test_stats(tmp_path: Path) -> None:
    store = ChromaStore.open(tmp_path)
    fill(store)
    store.add(
        attempt(1, GEMM, "compile_error", tags=("tiling",)),
        run_id="run2",
        **{**WHERE, "arch": "sm_80"},
    )
    s = store.stats()
    assert s.total == 4
    assert s.by_verdict == {"correct": 2, "wrong": 1, "compile_error": 1}
    assert s.by_arch == {"sm_90": 3, "sm_80": 1}
    assert s.by_tag["float4"].count == 2 and s.by_tag["float4"].correct == 1
    assert s.by_tag["float4"].mean_speedup == pytest.approx(5.4)
    assert s.by_tag["tiling"].mean_speedup is None


def test_embedding_is_deterministic_and_code_aware() -> None:
    e = CodeHashEmbedding()
    a, b, c = e([SHARED, SHARED.replace("partial", "buf"), GEMM])
    assert a.shape == (384,) and float(a @ a) == pytest.approx(1.0, abs=1e-5)
    assert float(a @ b) > float(a @ c)
    assert CodeHashEmbedding.build_from_config(e.get_config()).dim == 384
    code = (
        "from kernelwright.memory.embeddings import hash_embed; "
        f"print(hash_embed({SHARED!r}, 384)[:5].tolist())"
    )
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(other.stdout) == pytest.approx(a[:5].tolist())


def test_works_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the memory tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    store = ChromaStore.open(tmp_path)
    fill(store)
    assert store.search(SHARED, n=1)[0].id == "run1:1"


def test_ollama_unreachable_is_one_line() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    emb = OllamaEmbedding(base_url=f"http://127.0.0.1:{port}", timeout_s=2)
    with pytest.raises(EmbeddingUnavailable, match="ollama serve") as err:
        emb(["__global__ void k() {}"])
    assert "\n" not in str(err.value)


def test_stats_by_task_and_bottleneck_and_where_in_the_graph(tmp_path: Path) -> None:
    from kernelwright.memory.store import Provenance

    store = ChromaStore.open(tmp_path)
    fill(store)
    where = Provenance(
        task_signature="matmul",
        op_class="gemm",
        bottleneck="compute-bound",
        arch="sm_90",
        model="m",
        run_id="mm",
        technique="smem-tiling",
        state=("coalescing", "unroll"),
        parent_speedup=2.0,
    )
    store.add_many([(attempt(4, GEMM, speedup=5.0, parent=3, tags=("smem-tiling",)), where)])
    s = store.stats()
    assert s.by_task["rowsum(f32[M,N])->f32[M]"].count == 3
    assert s.by_task["matmul"].best_speedup == pytest.approx(5.0)
    assert s.by_bottleneck["memory-bound"].correct == 2
    assert s.by_bottleneck["memory-bound"].best_speedup == pytest.approx(5.4)
    assert s.by_op_class == {"reduction": 3, "gemm": 1}
    (hit,) = store.search(GEMM, n=1, where={"run_id": "mm"})
    assert hit.technique == "smem-tiling" and hit.state == ("coalescing", "unroll")
    assert hit.parent_speedup == 2.0 and hit.parent == "mm:3"


def test_import_checks_every_record_before_it_writes_one(tmp_path: Path) -> None:
    from kernelwright.memory.export_file import MemoryFileError

    a = ChromaStore.open(tmp_path / "a")
    fill(a)
    a.export_jsonl(tmp_path / "m.jsonl")
    lines = (tmp_path / "m.jsonl").read_text().splitlines()
    row = json.loads(lines[2])
    row["metadata"]["speedup"] = math.inf
    (tmp_path / "bad.jsonl").write_text("\n".join([*lines[:2], json.dumps(row)]) + "\n")
    b = ChromaStore.open(tmp_path / "b")
    with pytest.raises(MemoryFileError, match=r"bad.jsonl: record 3: speedup: not a finite number"):
        b.import_jsonl(tmp_path / "bad.jsonl")
    assert b.count() == 0


def test_import_takes_back_what_it_wrote_when_a_write_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = ChromaStore.open(tmp_path / "a")
    fill(a)
    a.export_jsonl(tmp_path / "m.jsonl")
    b = ChromaStore.open(tmp_path / "b")
    b.batch = 1  # one record a write
    add = type(b.collection).add
    calls = []

    def second_fails(self: object, *args: object, **kwargs: object) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("the server went away")
        add(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(type(b.collection), "add", second_fails)
    with pytest.raises(StoreUnavailable, match="nothing imported: the server went away"):
        b.import_jsonl(tmp_path / "m.jsonl")
    assert b.count() == 0


def test_a_bad_stored_record_is_skipped_not_fatal(tmp_path: Path) -> None:
    from kernelwright.memory.records import BadRecord
    from kernelwright.memory.store import Episode

    store = ChromaStore.open(tmp_path)
    fill(store)
    store.collection.add(
        ids=["old:1"],
        documents=[WARP],  # nearest to WARP, ahead of run1:2
        metadatas=[{"verdict": "correct", "speedup": 2.0, "index": "ten"}],
    )
    with pytest.raises(BadRecord, match=r'old:1: index: expected an integer, got "ten"'):
        Episode.from_record("old:1", WARP, {"index": "ten"})
    assert [h.id for h in store.search(WARP, n=1)] == ["run1:2"]
    assert [h.id for h in store.search(WARP, n=5)] == ["run1:2", "run1:3", "run1:1"]
    assert list(store.skipped) == ["old:1"]
    assert store.stats().total == 3
    assert store.export_jsonl(tmp_path / "m.jsonl") == 3
    assert store.matching(invalid=True) == (["old:1"], 0)
    store.delete(["old:1"])
    store.skipped.clear()
    assert len(store.search(WARP, n=5)) == 3 and store.skipped == {}


def test_a_run_date_is_read_off_the_run_id() -> None:
    from datetime import date

    from kernelwright.memory.store import run_date

    assert run_date("rowsum-20240105-101500") == date(2024, 1, 5)
    assert run_date("kb-relu-mlp-20250301-090000-2") == date(2025, 3, 1)
    assert run_date("rowsum-1") is None and run_date("x-20241399-101500") is None


def test_a_memory_server_that_never_answers_is_one_line_in_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It blocked for a minute or more: chromadb's client has no timeout."""
    import socket
    import time

    from kernelwright.memory import store as store_mod

    monkeypatch.setattr(store_mod, "PROBE_TIMEOUT_S", 0.5)
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts, never answers
    url = f"http://127.0.0.1:{silent.getsockname()[1]}"
    start = time.perf_counter()
    try:
        with pytest.raises(store_mod.StoreUnavailable, match="did not answer within"):
            store_mod.ChromaStore.open(url=url)
    finally:
        silent.close()
    assert time.perf_counter() - start < 5


def test_a_real_chroma_server_is_reached_through_memory_url(tmp_path: Path) -> None:
    """The heartbeat probe and the timeout leave a real `chroma run` server usable."""
    import shutil
    import time

    import httpx

    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    if not Path(chroma).is_file():
        pytest.skip("the chroma command is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [chroma, "run", "--path", str(tmp_path / "srv"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{url}/api/v2/heartbeat", timeout=1.0)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        store = ChromaStore.open(url=url)
        assert store.count() == 0 and store.search("float4 loads") == []
    finally:
        server.kill()
        server.wait(timeout=10)
