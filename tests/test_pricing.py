"""Picking the hourly price of the GPU a job actually got, from the launcher's candidate list."""

import pytest

from gpubench.pricing import PriceError, parse_prices, price_for

OFFER = parse_prices("RTX5090=0.69,A100=1.29,A100-80GB=1.73,L40S=0.86,H100=3.86")


@pytest.mark.parametrize("nvidia_smi_name, expected", [
    ("NVIDIA GeForce RTX 5090", ("RTX5090", 0.69)),
    ("NVIDIA A100-SXM4-80GB", ("A100-80GB", 1.73)),  # the more specific name wins
    ("NVIDIA A100-PCIE-40GB", ("A100", 1.29)),
    ("NVIDIA L40S", ("L40S", 0.86)),
    ("NVIDIA H100 PCIe", ("H100", 3.86)),
    ("NVIDIA H200", None),  # not offered: no price rather than a wrong one
])
def test_the_price_of_the_gpu_obtained(nvidia_smi_name, expected):
    assert price_for(OFFER, [nvidia_smi_name]) == expected


def test_ambiguous_or_absent_gpus_get_no_price():
    assert price_for({"A100-40GB": 1.0, "A100-SXM4": 2.0}, ["NVIDIA A100-SXM4-40GB"]) is None
    assert price_for(OFFER, []) is None


def test_malformed_price_lists_are_refused():
    with pytest.raises(PriceError, match="use NAME=USD_PER_HOUR"):
        parse_prices("L40S:0.86")
    with pytest.raises(PriceError):
        parse_prices("L40S=cheap")


def test_a_class_name_matches_whole_words_of_the_gpu_name_only():
    from gpubench.pricing import best_match

    names = ["A10", "A100", "A100-80GB", "L40", "L40S", "RTX5090", "RTX A6000", "RTX 6000 Ada"]
    assert best_match(names, ["NVIDIA A10"]) == "A10"
    assert best_match(names, ["NVIDIA A100 80GB PCIe"]) == "A100-80GB"  # not the A10, and the most specific
    assert best_match(names, ["NVIDIA A100-SXM4-40GB"]) == "A100"
    assert best_match(names, ["NVIDIA L40S"]) == "L40S"
    assert best_match(names, ["NVIDIA GeForce RTX 5090"]) == "RTX5090"
    assert best_match(names, ["NVIDIA RTX 6000 Ada Generation"]) == "RTX 6000 Ada"
    assert best_match(names, ["NVIDIA RTX A6000"]) == "RTX A6000"
