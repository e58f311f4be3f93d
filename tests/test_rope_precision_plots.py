"""The precision demonstration's numbers (notebook 06): the library's bf16/fp32 RoPE error against
angles computed in the input's dtype. For the lead to merge into the rope plots' test file."""
import torch

from posenc_lib.plots.part2 import naive_rope, rope_precision_errors
from posenc_lib.rope import apply_rope


def test_library_bf16_error_is_bf16_rounding_naive_is_far_worse():
    positions = torch.tensor([65536, 100000, 500000, 1000000])
    err = rope_precision_errors(positions, dim=64)
    # the library: angles in float64, one rounding of the result to bf16 (at most ~1 bf16 ulp of |x| <= ~4)
    assert (err["library_bf16"] <= 2 * err["bf16_rounding"] + 1e-6).all()
    assert (err["library_bf16"] < 2.0 ** -8 * 4).all()
    # angles in bf16: the positions themselves round to multiples of 512 and more -> errors of order |x|
    assert (err["naive_bf16"] > 50 * err["library_bf16"]).all()
    assert (err["naive_bf16"] > 0.5).all()
    # float32 inputs: the library's angles are float64, so the error stays at float32 rounding; angles computed
    # in float32 drift with the position (relative error ~6e-8 of an angle of up to 1e6 radians)
    assert (err["library_fp32"] < 1e-5).all()
    assert err["naive_fp32"][-1] > 1e-3 > 1e-5 > err["library_fp32"][-1]


def test_naive_rope_is_exact_where_precision_suffices():
    x = torch.randn(5, 8, dtype=torch.float64)
    pos = torch.arange(5)
    torch.testing.assert_close(naive_rope(x, pos, angle_dtype=torch.float64), apply_rope(x, pos), rtol=0, atol=1e-12)
