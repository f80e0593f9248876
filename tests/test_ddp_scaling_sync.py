"""What the DDP variants do to gradients, on 2 real gloo processes: no_sync keeps micro-batches local,
the last one all-reduces, and the bf16 hook sends (and returns) bf16 values."""

import json
import os
import socket
import subprocess
import sys

import pytest

RANK_SCRIPT = r"""
import json, sys
import torch
from gpubench.workloads import ddp_scaling
from gpubench.workloads.ddp_scaling.model import GPT

config = ddp_scaling.Config(device="cpu", **ddp_scaling.SMOKE)
group = ddp_scaling.join_group(ddp_scaling.Recipe(2, "124m"), config)
out = {}
for bf16 in (False, True):
    torch.manual_seed(0)
    model = GPT(config.vocab_size, config.seq_len, 2, 32, 2)
    ddp = ddp_scaling.wrap(model, group, bf16_hook=bf16)
    tokens = torch.Generator().manual_seed(100 + group.rank)
    seen = []  # ln_f's gradient as each micro-batch starts: what the earlier ones left behind

    def next_batch():
        grad = model.ln_f.weight.grad
        seen.append(None if grad is None else grad.tolist())
        return torch.randint(0, config.vocab_size, (2, config.seq_len + 1), generator=tokens)

    ddp_scaling.accumulate(ddp, 4, next_batch)
    grads = [p.grad for p in model.parameters()]
    out["bf16" if bf16 else "fp32"] = {
        "after_first": seen[1], "final": torch.cat([g.flatten() for g in grads]).tolist(),
        "bf16_exact": all(torch.equal(g, g.bfloat16().float()) for g in grads),
        "calls": len(seen),
    }
print(json.dumps(out))
torch.distributed.destroy_process_group()
"""


@pytest.fixture(scope="module")
def ranks():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    procs = [subprocess.Popen([sys.executable, "-c", RANK_SCRIPT], stdout=subprocess.PIPE, text=True, env={
        **os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(rank),
        "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}) for rank in range(2)]
    outputs = [proc.communicate(timeout=300)[0] for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    return [json.loads(out.strip().splitlines()[-1]) for out in outputs]


@pytest.mark.parametrize("variant", ["fp32", "bf16"])
def test_micro_batches_stay_local_until_the_last_one_all_reduces(ranks, variant):
    first, second = (r[variant] for r in ranks)
    assert first["calls"] == 4
    # Each rank saw its own tokens: after one micro-batch under no_sync the gradients still differ...
    assert first["after_first"] != second["after_first"]
    # ...and after the last backward DDP has averaged them: every rank holds the same gradient.
    assert first["final"] == second["final"]


def test_the_bf16_hook_all_reduces_bf16_values(ranks):
    assert all(r["bf16"]["bf16_exact"] for r in ranks)
    assert not any(r["fp32"]["bf16_exact"] for r in ranks)  # plain DDP keeps fp32 gradients
