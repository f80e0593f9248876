"""What llama-server's startup log says about memory, read as the post reports it: the model, the KV cache, and
their sum on the GPU (what Ollama reports as the model's size in VRAM for the same runner)."""

from __future__ import annotations

import pytest

from gpubench.servers.llamacpp import buffers

# The lines llama.cpp 0.5.0 prints at --log-verbosity 4 for a Qwen2.5-7B Q4_K_M on one CUDA GPU with 16 slots of
# 4096 tokens (as its CPU build prints them for the tiny model, with the CUDA device names of its LLAMA_LOG_INFO
# formats: src/llama-model.cpp, llama-kv-cache.cpp, llama-context.cpp), among others.
CUDA_LOG = """\
0.00.041.116 I srv    load_model: loading model '/cache/gguf/qwen2-28x3584-random-0123456789abcdef/model-Q4_K_M.gguf'
0.01.370.950 I load_tensors: offloaded 29/29 layers to GPU
0.01.374.744 I load_tensors:   CPU_Mapped model buffer size =   292.36 MiB
0.01.374.750 I load_tensors:        CUDA0 model buffer size =  4168.09 MiB
0.01.377.354 I llama_context: n_ctx                 = 65536
0.01.382.563 I llama_context:  CUDA_Host  output buffer size =     9.28 MiB
0.01.384.889 I llama_kv_cache:      CUDA0 KV buffer size =  3584.00 MiB
0.01.450.450 I llama_kv_cache: size = 3584.00 MiB (  4096 cells,  28 layers, 16/16 seqs), K (f16): 1792.00 MiB, ...
0.01.466.120 I llama_context:      CUDA0 compute buffer size =   304.00 MiB
0.01.466.130 I llama_context:  CUDA_Host compute buffer size =   135.01 MiB
0.02.850.869 I srv    load_model: initializing, n_slots = 16, n_ctx_slot = 4096, kv_unified = 'false'
"""


def test_buffers_by_kind_and_device():
    found = buffers(CUDA_LOG)
    assert found.model == {"CPU_Mapped": 292.36, "CUDA0": 4168.09}
    assert found.kv == {"CUDA0": 3584.0} and found.compute == {"CUDA0": 304.0, "CUDA_Host": 135.01}
    assert found.gib("model") == pytest.approx((292.36 + 4168.09) / 1024)
    # on the GPU: CUDA0's model, KV and compute buffers; the mapped embeddings and pinned host buffers are host memory
    on_gpu = sum(found.gib(kind, gpu_only=True) for kind in ("model", "kv", "compute"))
    assert on_gpu == pytest.approx((4168.09 + 3584.0 + 304.0) / 1024)


def test_a_log_without_buffers_gives_none():
    found = buffers("main: loading model\nerror: failed to load model\n")
    assert (found.model, found.kv, found.compute) == ({}, {}, {})
