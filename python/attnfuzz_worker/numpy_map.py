"""mode="numpy": the shared region's tensors as numpy arrays (read side only; the
kernel's arrays are written back by the worker's one conversion routine, as in
mode="python").

Every array is float32 and holds the exact logical values attnfuzz generated (fp16, bf16,
E4M3 and fp32 values are all exact in float32; fp8's descale applied): numpy has no
bfloat16, so the kernel gets the stored values widened, never rounded."""
import numpy as np

from . import storage as st

E4M3 = np.array(st.E4M3_TABLE, dtype=np.float32)


def _row(storage, region, offset, n):
    """n consecutive stored elements at byte offset of region, as float32 (exact)."""
    if storage == "f16":
        return np.frombuffer(region, dtype="<f2", count=n, offset=offset).astype(np.float32)
    if storage == "bf16":
        bits = np.frombuffer(region, dtype="<u2", count=n, offset=offset).astype(np.uint32) << 16
        return bits.view(np.float32)
    if storage == "f32":
        return np.frombuffer(region, dtype="<f4", count=n, offset=offset).astype(np.float32)
    if storage == "e4m3":
        return E4M3[np.frombuffer(region, dtype=np.uint8, count=n, offset=offset)]
    raise ValueError("unknown storage %r" % storage)


def host_array(tensor, lengths, lse=False):
    """A HostTensor as a dense float32 array: (B, H, S, D), rows past a sequence's length
    zero; lse=True: (B, H, S), rows past the length -inf (fully masked), as mode="torch"."""
    if tensor.mx is not None:
        raise RuntimeError("mode numpy: %s carries mxfp8 scales, which this mode does not map (use mode='torch')"
                           % tensor.name)
    B, H, S, D = tensor.shape
    out = np.full((B, H, S), -np.inf, dtype=np.float32) if lse else np.zeros((B, H, S, D), dtype=np.float32)
    for b in range(B):
        for h in range(H):
            for s in range(lengths[b]):
                offset = tensor.origin + tensor.element_offset(b, h, s, 0) * tensor.elem
                row = _row(tensor.storage, tensor.region, offset, D)
                if lse:
                    out[b, h, s] = row[0]
                else:
                    out[b, h, s] = row
    return out * np.float32(tensor.descale) if tensor.descale != 1.0 else out
