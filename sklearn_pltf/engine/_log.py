"""A natural logarithm that numba's compiler turns into vector code.

numba calls the C library's scalar ``log`` for ``math.log``, one entry at a
time; a loop that takes the logarithm of every entry of a dense tensor (the
bound's Σ X log X̂) then runs slower than numpy's vectorised
``np.log``, and cannot be fused with the other passes over the same entries.
:func:`log_positive` is fdlibm's ``__ieee754_log`` (Sun Microsystems, 1993;
the algorithm of Tang, ACM TOMS 1990, with a minimax polynomial) written
without branches or calls, so that the compiler vectorises a loop around it:

.. math::

    x = 2^k (1 + f), \\quad \\sqrt{2}/2 \\le 1 + f < \\sqrt{2}, \\qquad
    \\log x = k \\log 2 + \\log(1 + f), \\qquad
    \\log(1 + f) = f - s (f - R(s^2)), \\quad s = f / (2 + f),

with ``log 2`` split in two parts so that ``k log 2`` is exact, and R a
degree-7 polynomial in s². Its error is below one unit in the last place.
"""

from __future__ import annotations

import numba
from numba.core import types
from numba.extending import intrinsic

__all__ = ["log_positive"]

# fdlibm's e_log.c: minimax coefficients of R, and log 2 = _LN2_HI + _LN2_LO
# with _LN2_HI's last 32 bits zero (so k * _LN2_HI is exact for |k| < 2^11).
_LG1, _LG2 = 6.666666666666735130e-01, 3.999999999940941908e-01
_LG3, _LG4 = 2.857142874366239149e-01, 2.222219843214978396e-01
_LG5, _LG6 = 1.818357216161805012e-01, 1.531383769920937332e-01
_LG7 = 1.479819860511658591e-01
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10

_MANTISSA = 0x000FFFFFFFFFFFFF
_ONE_EXPONENT = 0x3FF0000000000000
# Added to the mantissa, carries into bit 52 exactly when 1 + f >= √2.
_SQRT2_CARRY = 0x00095F6400000000
_CARRY = 0x0010000000000000


def _bitcast(signature):
    """An intrinsic's typing and code: its one argument's bits, unchanged,
    as the signature's return type."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], context.get_value_type(sig.return_type))
    return signature, codegen


@intrinsic
def _bits_of(typingctx, value):
    """The IEEE 754 bits of a float64, as an int64 (no conversion)."""
    return _bitcast(types.int64(types.float64))


@intrinsic
def _float_of(typingctx, bits):
    """The float64 whose IEEE 754 bits are the int64 ``bits``."""
    return _bitcast(types.float64(types.int64))


@numba.njit(cache=True, nogil=True, inline="always", fastmath={"contract"})
def log_positive(value):  # pragma: no cover - compiled
    """log(value) for a positive normal float64 (module docstring); +inf
    and NaN are returned as they are, as ``math.log`` does. Zero, negative
    and subnormal values are outside its domain (the dense passes floor X̂
    at the smallest normal float first)."""
    bits = _bits_of(value)
    mantissa = bits & _MANTISSA
    carry = (mantissa + _SQRT2_CARRY) & _CARRY
    k = float((bits >> 52) - 1023 + (carry >> 52))
    f = _float_of(mantissa | (carry ^ _ONE_EXPONENT)) - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    half_f_squared = 0.5 * f * f
    log = k * _LN2_HI - ((half_f_squared - (s * (half_f_squared + r) + k * _LN2_LO)) - f)
    return value if (bits >> 52) >= 2047 else log
