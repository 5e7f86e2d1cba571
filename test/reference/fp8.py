"""OCP FP8 e4m3 (float8_e4m3fn) from its definition, for references of the
FP8 KV cache: 1 sign, 4 exponent (bias 7) and 3 mantissa bits, no
infinities, magnitude code 0x7f is NaN, the largest finite value 448."""

import numpy as np

LARGEST = 448.0


def _magnitudes():
    """The finite non-negative values of codes 0..126, in code order (which
    is increasing)."""
    codes = np.arange(0x7F)
    exponent, mantissa = codes >> 3, codes & 7
    return np.where(exponent == 0, mantissa / 8 * 2.0**-6,
                    (1 + mantissa / 8) * 2.0**(exponent - 7))


MAGNITUDES = _magnitudes()


def e4m3_round(x):
    """x rounded to the nearest e4m3 value (ties to the even code),
    magnitudes past 448 saturating to 448: float64, the sign kept."""
    x = np.asarray(x, dtype=np.float64)
    a = np.minimum(np.abs(x), LARGEST)
    upper = np.clip(np.searchsorted(MAGNITUDES, a), 1, len(MAGNITUDES) - 1)
    lower = upper - 1
    below, above = a - MAGNITUDES[lower], MAGNITUDES[upper] - a
    pick = np.where((above < below) | ((above == below) & (upper % 2 == 0)), upper, lower)
    return np.copysign(MAGNITUDES[pick], x)


def e4m3_codes(x):
    """The e4m3 codes (uint8) of x rounded as e4m3_round rounds it."""
    rounded = e4m3_round(x)
    codes = np.searchsorted(MAGNITUDES, np.abs(rounded)).astype(np.uint8)
    return codes | np.where(np.signbit(rounded), 0x80, 0).astype(np.uint8)


def e4m3_values(codes):
    """float64 values of e4m3 codes (uint8); NaN for the NaN codes."""
    codes = np.asarray(codes, dtype=np.uint8)
    magnitude = codes & 0x7F
    values = np.where(magnitude == 0x7F, np.nan, MAGNITUDES[np.minimum(magnitude, 0x7E)])
    return np.where(codes & 0x80, -values, values)
