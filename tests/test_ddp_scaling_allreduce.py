"""The all-reduce test's sizes and bus-bandwidth factor are nccl-tests' own."""

import pytest

from gpubench.workloads import ddp_scaling
from gpubench.workloads.ddp_scaling import allreduce as ddp_allreduce


def test_sizes_double_from_8_mb_to_1_gb():
    config = ddp_scaling.Config()
    sizes = ddp_allreduce.message_sizes(config.allreduce_min_mb, config.allreduce_max_mb)
    assert sizes == [8 << 20, 16 << 20, 32 << 20, 64 << 20, 128 << 20, 256 << 20, 512 << 20, 1 << 30]


def test_bus_bandwidth_factor_is_2_n_minus_1_over_n():
    # the post: 4.3 GB/s bus bandwidth on 4 GPUs is 2.9 GB/s of algorithm bandwidth
    assert [ddp_allreduce.bus_factor(n) for n in (1, 2, 4, 8)] == [0, 1, 1.5, 1.75]
    assert 4.3 / ddp_allreduce.bus_factor(4) == pytest.approx(2.9, abs=0.05)


def test_bad_size_range_is_refused():
    with pytest.raises(ValueError, match="min"):
        ddp_allreduce.message_sizes(16, 8)
