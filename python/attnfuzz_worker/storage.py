"""Storage formats of attnfuzz buffers, element by element in pure Python (no numpy).

Every conversion to a storage format rounds to nearest, ties to even, as the harness
expects of a kernel that rounds once."""
import math
import struct

ELEM_BYTES = {"f16": 2, "bf16": 2, "e4m3": 1, "f32": 4}


def _e4m3_decode(byte):
    sign = -1.0 if byte & 0x80 else 1.0
    exp = (byte >> 3) & 0xF
    man = byte & 0x7
    if exp == 0xF and man == 0x7:
        return math.nan
    if exp == 0:
        return sign * man * 2.0 ** -9
    return sign * (1 + man / 8.0) * 2.0 ** (exp - 7)


E4M3_TABLE = [_e4m3_decode(b) for b in range(256)]


def load(storage, buf, byte_offset):
    """The stored element at byte_offset of buf as a float (exact)."""
    if storage == "f16":
        return struct.unpack_from("<e", buf, byte_offset)[0]
    if storage == "bf16":
        (bits,) = struct.unpack_from("<H", buf, byte_offset)
        return struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    if storage == "f32":
        return struct.unpack_from("<f", buf, byte_offset)[0]
    if storage == "e4m3":
        return E4M3_TABLE[buf[byte_offset]]
    raise ValueError("unknown storage %r" % storage)


def _round_to_bits(x, mantissa_bits, min_exp):
    """x rounded to a binary format with mantissa_bits significant bits after the
    leading one and normal exponents >= min_exp (subnormals below), RNE."""
    if x == 0 or math.isnan(x) or math.isinf(x):
        return x
    m, e = math.frexp(abs(x))  # abs(x) = m * 2^e, m in [0.5, 1)
    exp = max(e - 1, min_exp)  # exponent of the leading bit (or the subnormal floor)
    quantum = 2.0 ** (exp - mantissa_bits)
    q = round(abs(x) / quantum)  # exact division by a power of two; round() ties to even
    return math.copysign(q * quantum, x)


def store(storage, buf, byte_offset, value):
    """Round value to storage and write it at byte_offset of buf."""
    value = float(value)
    if storage == "f16":
        r = _round_to_bits(value, 10, -14)
        if abs(r) > 65504.0:
            r = math.copysign(math.inf, r)
        struct.pack_into("<e", buf, byte_offset, r)
    elif storage == "bf16":
        if math.isnan(value):
            bits = 0x7FC0
        else:
            r = _round_to_bits(value, 7, -126)
            if abs(r) >= 2.0 ** 128:
                r = math.copysign(math.inf, r)
            (f32,) = struct.unpack("<I", struct.pack("<f", r))  # r is exact in fp32
            bits = f32 >> 16
        struct.pack_into("<H", buf, byte_offset, bits)
    elif storage == "f32":
        r = _round_to_bits(value, 23, -126)
        if abs(r) >= 2.0 ** 128:
            r = math.copysign(math.inf, r)
        struct.pack_into("<f", buf, byte_offset, r)
    elif storage == "e4m3":
        buf[byte_offset] = encode_e4m3(value)
    else:
        raise ValueError("unknown storage %r" % storage)


def encode_e4m3(value):
    """OCP E4M3FN, RNE, saturating to 448 (NaN stays NaN)."""
    if math.isnan(value):
        return 0x7F
    sign = 0x80 if math.copysign(1.0, value) < 0 else 0
    r = min(abs(_round_to_bits(value, 3, -6)), 448.0)
    best = min(range(0x7F), key=lambda b: abs(E4M3_TABLE[b] - r))
    return sign | best
