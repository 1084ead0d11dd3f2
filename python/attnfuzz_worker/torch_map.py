"""Tensors of a request as torch tensors: strided views on the shared region (host
transport) or on attnfuzz's device buffers (cuda_ipc transport, opened with CuPy and
wrapped through DLPack). Ragged (thd) and paged tensors are gathered into dense
(B, H, S, D) tensors; outputs are written back row by row, rows s < the sequence's
length only (the ABI allows leaving padded rows). The shm path (plain, padded, ragged,
paged, mxfp8 scales) ran on CPU with torch 2.15 (ci/tests/test_pytargets.sh); the CUDA
IPC path ran on the H200 (transport auto picks it for a CUDA worker; its cost per case
against shm: docs/targets.md)."""
import torch

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
if hasattr(torch, "float8_e4m3fn"):
    DTYPES["e4m3"] = torch.float8_e4m3fn


class IpcBuffers:
    """Opened CUDA IPC handles of one request; close() before replying."""

    def __init__(self):
        self.ptrs = []

    def open(self, handle_hex, nbytes):
        import cupy

        ptr = cupy.cuda.runtime.ipcOpenMemHandle(bytes.fromhex(handle_hex))
        self.ptrs.append(ptr)
        mem = cupy.cuda.UnownedMemory(ptr, nbytes, owner=None)
        arr = cupy.ndarray((nbytes,), dtype=cupy.uint8, memptr=cupy.cuda.MemoryPointer(mem, 0))
        return torch.from_dlpack(arr)

    def close(self):
        import cupy

        torch.cuda.synchronize()
        for ptr in self.ptrs:
            cupy.cuda.runtime.ipcCloseMemHandle(ptr)
        self.ptrs = []


def flat_buffers(buffers, region, ipc):
    """{buffer name: uint8 tensor of the whole buffer, guards included}."""
    out = {}
    for name, b in buffers.items():
        if b["kind"] == "shm":
            out[name] = torch.frombuffer(region, dtype=torch.uint8, count=b["bytes"], offset=b["offset"])
        else:
            out[name] = ipc.open(b["handle"], b["bytes"])
    return out


def mx_scales(desc, region):
    """mxfp8 (plugin.h): the tensor's E8M0 bytes as a uint8 tensor of mx_scale's shape,
    (B, H, S, ceil(D / 32)) for Q and K, (B, H, ceil(S / 32), D) for V; None without."""
    m = desc.get("mx_scale")
    if m is None:
        return None
    if region is None:
        raise RuntimeError("mx_scale: the scales live in the shm region, which is not mapped")
    flat = torch.frombuffer(region, dtype=torch.uint8, count=m["bytes"], offset=m["offset"])
    return flat.view(*m["shape"]).clone()


def mx_factor(scales, S, D):
    """(B, H, S, D) float32 factors 2^(byte - 127) of E8M0 scales, expanded from blocks of
    32 along whichever axis the scale shape is blocked on."""
    f = torch.exp2(scales.to(torch.float32) - 127.0)
    if f.shape[2] != S:  # V: blocks of 32 tokens
        f = f.repeat_interleave(32, dim=2)[:, :, :S]
    if f.shape[3] != D:  # Q, K: blocks of 32 along d
        f = f.repeat_interleave(32, dim=3)[..., :D]
    return f


class TorchTensor:
    """One tensor of the request over its buffer."""

    def __init__(self, desc, flat, is_lse=False, region=None):
        self.desc = desc
        self.is_lse = is_lse
        self.dtype = DTYPES[desc["storage"]]
        elem = torch.empty((), dtype=self.dtype).element_size()
        self.typed = flat.view(self.dtype)
        self.origin = desc["offset"] // elem
        self.B, self.H, self.S, self.D = desc["shape"]
        self.sb, self.sh, self.ss, _ = desc["strides"]
        self.descale = desc.get("descale", 1.0)
        self.mx = mx_scales(desc, region)

    def seq_view(self, b, length):
        """(H, length, D) view of sequence b (LSE: (H, length))."""
        d = self.desc
        if "token_start" in d:
            start = self.origin + d["token_start"][b] * self.ss
        else:
            start = self.origin + b * self.sb
        if self.is_lse:
            return self.typed.as_strided((self.H, length), (self.sh, self.ss), start)
        return self.typed.as_strided((self.H, length, self.D), (self.sh, self.ss, 1), start)

    def raw(self, device):
        """The tensor in attnfuzz's own memory layout, on device, in its storage dtype: the
        whole buffer is copied (an IPC buffer already on device is used in place) and viewed
        with the descriptor's strides, so stride gaps, packing, thd gaps and page tails hold
        what attnfuzz put there. Dense: a (B, H, S, D) view; ragged (thd): (T, H, D) with T =
        token_start[-1]; paged K/V: the page pool (n_pages, page_size, H, D). LSE: no D."""
        typed = self.typed if self.typed.device.type == torch.device(device).type else self.typed.to(device)
        d = self.desc
        if "page_table" in d:
            n_pages = len(set(d["page_table"]))
            return typed.as_strided((n_pages, d["page_size"], self.H, self.D), (self.sb, self.ss, self.sh, 1),
                                    self.origin)
        if "token_start" in d:
            shape, strides = (d["token_start"][-1], self.H, self.D), (self.ss, self.sh, 1)
        else:
            shape, strides = (self.B, self.H, self.S, self.D), (self.sb, self.sh, self.ss, 1)
        if self.is_lse:
            shape, strides = shape[:-1], strides[:-1]
        return typed.as_strided(shape, strides, self.origin)

    def dense(self, device, lengths):
        """A dense float32 (B, H, S, D) copy on device, logical values; rows past a
        sequence's length are zero."""
        out = torch.zeros((self.B, self.H, self.S, self.D), dtype=torch.float32, device=device)
        d = self.desc
        for b in range(self.B):
            n = lengths[b]
            if "page_table" in d:
                ps, pps = d["page_size"], d["pages_per_seq"]
                for p in range((n + ps - 1) // ps):
                    page = d["page_table"][b * pps + p]
                    rows = min(ps, n - p * ps)
                    v = self.typed.as_strided((self.H, rows, self.D), (self.sh, self.ss, 1),
                                              self.origin + page * self.sb)
                    out[b, :, p * ps:p * ps + rows] = v.to(device=device, dtype=torch.float32)
            else:
                out[b, :, :n] = self.seq_view(b, n).to(device=device, dtype=torch.float32)
        if self.mx is not None:
            out = out * mx_factor(self.mx, self.S, self.D).to(device)
        return out * self.descale if self.descale != 1.0 else out

    def dense_lse(self, device, lengths):
        """A dense float32 (B, H, S) copy of an LSE on device; rows past a sequence's
        length are -inf (fully masked)."""
        out = torch.full((self.B, self.H, self.S), -float("inf"), dtype=torch.float32, device=device)
        for b in range(self.B):
            n = lengths[b]
            out[b, :, :n] = self.seq_view(b, n).to(device=device, dtype=torch.float32)
        return out

    def write(self, value, lengths):
        """Write value (B, H, S, D) (LSE: (B, H, S)) into the buffer, rows < lengths[b]."""
        for b in range(self.B):
            n = lengths[b]
            if n == 0:
                continue
            dst = self.seq_view(b, n)
            src = value[b, :, :n]
            if self.descale != 1.0:
                src = src.float() / self.descale
            dst.copy_(src.to(device=dst.device, dtype=self.dtype))
