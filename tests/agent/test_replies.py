"""Reading kernel proposals out of the messy replies small models send."""

from __future__ import annotations

import pytest

from kernelwright.agent.replies import (
    Proposal,
    ReplyError,
    parse_json_object,
    parse_proposal,
    repair_message,
)

KERNEL = """extern "C" __global__ void gelu(const float* __restrict__ x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
    }
}
"""

HELPER = """#include <cuda_fp16.h>

__device__ __forceinline__ float cube(float v) { return v * v * v; }
"""


def fenced(tag: str, body: str) -> str:
    return f"```{tag}\n{body.rstrip()}\n```\n"


@pytest.mark.parametrize("tag", ["cuda", "cu", "c++", "cpp", "c", "", "CUDA", "cuda title=gelu.cu"])
def test_code_is_found_under_any_usual_fence_tag(tag: str) -> None:
    reply = "Here is the optimized kernel:\n\n" + fenced(tag, KERNEL) + "\nThis fuses the math."
    assert parse_proposal(reply, "gelu").source == KERNEL


def test_metadata_in_a_json_block_after_the_code() -> None:
    reply = (
        "I vectorized the loads.\n\n"
        + fenced("cuda", KERNEL)
        + "\n"
        + fenced(
            "json",
            '{"launch": {"block": [128], "grid": ["ceil_div(N, 128)"], "shared_mem_bytes": 0},\n'
            ' "tags": ["vectorized", "fast-math"], "rationale": "tanhf is cheap enough"}\n',
        )
    )
    proposal = parse_proposal(reply, "gelu")
    assert proposal == Proposal(
        source=KERNEL,
        launch={"block": [128], "grid": ["ceil_div(N, 128)"], "shared_mem_bytes": 0},
        tags=("vectorized", "fast-math"),
        rationale="tanhf is cheap enough",
    )


def test_sloppy_json_is_read() -> None:
    sloppy = """{
        // launch one thread per element, as before
        'launch': {'block': [256,], 'grid': ['ceil_div(N, 256)',],},
        tags: "Shared Memory, vectorized ,",   /* a comma string */
        'rationale': 'it\\'s memory-bound, so "fewer bytes" wins',
    }"""
    proposal = parse_proposal(fenced("json", sloppy) + fenced("cuda", KERNEL), "gelu")
    assert proposal.launch == {"block": [256], "grid": ["ceil_div(N, 256)"]}
    assert proposal.tags == ("shared memory", "vectorized")
    assert proposal.rationale == 'it\'s memory-bound, so "fewer bytes" wins'


def test_metadata_before_the_code_as_a_bare_object() -> None:
    reply = (
        'Plan: {"tags": ["grid-stride"], "rationale": "fewer blocks", "launch": null}\n\n'
        + fenced("cuda", KERNEL)
    )
    proposal = parse_proposal(reply, "gelu")
    assert proposal.tags == ("grid-stride",) and proposal.launch is None
    assert proposal.rationale == "fewer blocks"


def test_no_fences_at_all() -> None:
    reply = (
        "Sure! Here is a faster version.\n\n"
        + HELPER
        + "\n"
        + KERNEL
        + '\n{"tags": ["fast-math"], "launch": {"block": 512, "grid": "ceil_div(N, 512)"}}\n'
        + "It should be about 1.3x faster."
    )
    proposal = parse_proposal(reply, "gelu")
    assert proposal.source == HELPER + "\n" + KERNEL  # the helpers above are kept, no prose
    assert proposal.launch == {"block": [512], "grid": ["ceil_div(N, 512)"]}
    assert proposal.tags == ("fast-math",)


def test_braces_in_bare_code_are_not_taken_for_metadata() -> None:
    code = KERNEL.replace("if (i < n) {", "if (i >= n) {}\n    if (i < n) {")
    reply = '{"tags": ["guard"], "rationale": "early exit"}\n\n' + code
    proposal = parse_proposal(reply, "gelu")
    assert proposal.source == code and proposal.tags == ("guard",)


def test_the_last_of_two_code_blocks_is_the_kernel() -> None:
    old = KERNEL.replace("tanhf", "erff")
    reply = (
        "Your kernel:\n"
        + fenced("cuda", old)
        + "\nImproved:\n"
        + fenced("cuda", KERNEL)
        + "\nLaunch it like this:\n"
        + fenced("cpp", "gelu<<<ceil_div(n, 256), 256>>>(x, y, n);\n")  # no kernel in it
    )
    assert parse_proposal(reply, "gelu").source == KERNEL


def test_a_kernel_under_an_odd_tag_is_still_found() -> None:
    assert parse_proposal(fenced("python", KERNEL), "gelu").source == KERNEL


def test_a_closing_fence_right_after_the_code() -> None:
    reply = "```cuda\n" + KERNEL.rstrip() + "```\n" + '```json\n{"tags": ["x"]}```'
    proposal = parse_proposal(reply, "gelu")
    assert proposal.source == KERNEL and proposal.tags == ("x",)


def test_an_unclosed_fence_runs_to_the_end() -> None:
    reply = "```cuda\n" + KERNEL  # the reply stopped before the closing fence
    assert parse_proposal(reply, "gelu").source == KERNEL


def test_launch_bounds_and_helpers_inside_the_block() -> None:
    body = HELPER + KERNEL.replace("void gelu", "void __launch_bounds__(256) gelu")
    assert parse_proposal(fenced("cuda", body), "gelu").source == body


def test_no_json_means_no_metadata_not_an_error() -> None:
    proposal = parse_proposal(fenced("cuda", KERNEL) + "Uses fewer registers.", "gelu")
    assert (proposal.launch, proposal.tags, proposal.rationale) == (None, (), "")


def test_missing_rationale_is_empty() -> None:
    proposal = parse_proposal(fenced("cuda", KERNEL) + fenced("json", '{"tags": ["x"]}'), "gelu")
    assert proposal.rationale == "" and proposal.tags == ("x",)


def test_a_wrong_kernel_name_is_named_in_the_error() -> None:
    with pytest.raises(ReplyError) as info:
        parse_proposal(fenced("cuda", KERNEL.replace("gelu(", "gelu_fast(")), "gelu")
    assert info.value.missing == "entry"
    assert "entry point gelu" in str(info.value) and "it defines gelu_fast" in str(info.value)


def test_an_entry_without_extern_c_is_called_out() -> None:
    with pytest.raises(ReplyError, match='gelu is not extern "C"'):
        parse_proposal(fenced("cuda", KERNEL.replace('extern "C" ', "")), "gelu")


def test_no_code_at_all() -> None:
    with pytest.raises(ReplyError) as info:
        parse_proposal("I think using shared memory would help here.", "gelu")
    assert info.value.missing == "code" and "```cuda" in str(info.value)


def test_a_broken_json_block_is_an_error_not_silence() -> None:
    reply = fenced("cuda", KERNEL) + fenced("json", '{"launch": {"block": [256], "grid": ')
    with pytest.raises(ReplyError) as info:
        parse_proposal(reply, "gelu")
    assert info.value.missing == "metadata" and "not valid JSON" in str(info.value)


def test_a_launch_without_grid_is_an_error() -> None:
    reply = fenced("cuda", KERNEL) + fenced("json", '{"launch": {"block": [256]}}')
    with pytest.raises(ReplyError, match=r"launch\.grid must be a list of 1 to 3"):
        parse_proposal(reply, "gelu")


def test_repair_message_says_what_to_send_again() -> None:
    with pytest.raises(ReplyError) as info:
        parse_proposal(fenced("cuda", KERNEL.replace("gelu(", "gelu2(")), "gelu")
    message = repair_message(info.value)
    assert message["role"] == "user"
    text = message["content"]
    assert str(info.value) in text
    assert 'extern "C" __global__ void gelu(...)' in text
    assert "```cuda" in text and "```json" in text and '"launch": null' in text


def test_parse_json_object_finds_the_object_in_prose() -> None:
    assert parse_json_object("Metadata: {'a': True, b: None,} and more") == {"a": True, "b": None}
    assert parse_json_object('{"url": "http://x//y", "n": 1e-5}') == {
        "url": "http://x//y",
        "n": 1e-5,
    }
    with pytest.raises(ValueError, match="no JSON object"):
        parse_json_object("nothing here")
