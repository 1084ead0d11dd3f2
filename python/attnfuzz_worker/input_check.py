"""The input-mutation check on the worker's side (docs/worker-protocol.md, "inputs_written").

The torch mapping hands the kernel dense copies of Q, K, V, dO (and O, LSE in a
backward_given request), so a kernel that writes its arguments in place (SageAttention
1.0.6's `k -= km`) changes those copies, never the shared region that attnfuzz compares:
only the worker can see it. Before the kernel call each argument is cloned on its own
device; after the call the argument is compared with its clone bit for bit (an integer
view of the same bytes, so NaN payloads and signed zeros count), and each changed one is
reported with its first changed element (row-major index into the tensor as passed).

An adapter that passes the kernel tensors of its own (converted to fp16, transposed to
HND) adds them with problem.watch(k=k16, ...): they are checked the same way, under the
protocol's input name. Without torch (HostTensor views) the kernel reads and writes the
shared region itself, which attnfuzz compares after the reply: nothing to do here."""

NAMES = ("q", "k", "v", "do", "o", "lse")


def _bits(t):
    """The tensor's bytes as integers of its element size (flat, contiguous)."""
    import torch

    ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
    flat = t.detach().contiguous().reshape(-1)
    return flat.view(ints[flat.element_size()]) if flat.element_size() in ints else flat.view(torch.uint8)


def snapshot(args):
    """{name: (tensor, its clone)} for the named torch tensors in args (None skipped)."""
    return {n: (t, t.detach().clone()) for n, t in args.items() if t is not None and hasattr(t, "clone")}


def written(snap):
    """[{"tensor": name, "index": first changed element}] of the snapshot's tensors that no
    longer equal their clones (a tensor whose shape changed: index -1)."""
    out = []
    for name, (tensor, before) in snap.items():
        if tensor.shape != before.shape or tensor.dtype != before.dtype:
            out.append({"tensor": name, "index": -1})
            continue
        changed = (_bits(tensor) != _bits(before)).nonzero()
        if changed.numel():
            out.append({"tensor": name, "index": int(changed[0])})
    return out
