"""posenc_lib.below: how notebooks print float noise (a bound, not digits that change from CPU to CPU)."""
import math

import pytest
import torch

from posenc_lib import below


@pytest.mark.parametrize("value,bound,text", [(6.7e-16, 1e-12, "< 1e-12"), (1.2e-15, 1e-12, "< 1e-12"),
                                              (-2e-13, 1e-12, "< 1e-12"), (2e-7, 1e-5, "< 1e-5"),
                                              (3e-9, 1e-12, "3.0e-9"), (1e-12, 1e-12, "1.0e-12"),
                                              (0.25, 0.1, "2.5e-1"), (0.0, 1e-12, "< 1e-12")])
def test_below_prints_the_bound_or_the_value_that_breaks_it(value, bound, text):
    assert below(value, bound) == text


def test_below_takes_a_one_element_tensor_and_names_nan():
    assert below(torch.tensor(4.4e-16, dtype=torch.float64), 1e-12) == "< 1e-12"
    assert below(torch.tensor([3.0e-8]), 1e-6) == "< 1e-6"
    assert below(math.nan, 1e-12) == "nan" and below(math.inf, 1e-12) == "inf"


@pytest.mark.parametrize("bound", [0, -1e-12, "1e-12", None, True])
def test_below_refuses_a_bound_that_is_not_a_positive_number(bound):
    with pytest.raises(ValueError, match="bound must be a positive number"):
        below(1e-16, bound)
