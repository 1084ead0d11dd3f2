"""The problem of one request (docs/worker-protocol.md, "problem"), with the mask rule."""
import contextlib


class Problem:
    """Attributes are the protocol's problem fields: dtype, batch, heads_q, heads_kv,
    seqlen_q, seqlen_kv, head_dim_qk, head_dim_v, seqlens_q, seqlens_kv, mask, align,
    window_left, window_right, scale, backward, padded, ragged, paged, layout, packing,
    cp_size, features, case (the canonical case text), dropout_p, dropout_seed,
    dropout_offset (the Philox seed and offset: ints here, decimal strings on the wire).
    Set by the worker for a run: engine, given (("o", "lse") for a backward_given
    request, else ()), paging: the paged K/V's {page_size, pages_per_seq, page_table}
    as the request's descriptors give them (the harness's page table), None unless paged,
    and views (torch mode: {tensor name: torch_map.TorchTensor}, whose raw(device) is the
    tensor in attnfuzz's own memory layout; None in pure Python). watch(name=tensor) adds
    the adapter's own kernel arguments to the input-mutation check.

    kernel_call() marks the call of the kernel under test inside an adapter (see there);
    kernel_raised says whether an exception left such a block in this request."""

    def __init__(self, fields):
        self.fields = dict(fields)
        for key, value in fields.items():
            setattr(self, key, value)
        self.causal = self.mask == "causal"
        self.dropout_p = float(fields.get("dropout_p", 0.0))
        self.dropout_seed = int(fields.get("dropout_seed", "0"))
        self.dropout_offset = int(fields.get("dropout_offset", "0"))
        # score features (docs/worker-protocol.md): the soft cap c (0: none; scores
        # s -> c tanh(s / c)), the sinks' kind and one logit per query head (None: no sinks)
        self.softcap = float(fields.get("softcap", 0.0) or 0.0)
        # a score_mod by name: "none", "squared", "trig" or "trig2" (a worker maps it to its
        # own function; an older harness sends none)
        self.score_mod = str(fields.get("score_mod", "none") or "none")
        self.sinks = fields.get("sinks", "none")
        self.sink = list(fields["sink"]) if fields.get("sink") is not None else None
        self.group = self.heads_q // self.heads_kv
        self.engine = ""
        self.engines = {}  # {"forward": name, "backward": name}: set by ran()
        self.given = ()
        self.paging = None
        self.views = None
        self.kernel_raised = False
        self.watched = {}  # name -> (tensor, clone): the adapter's own kernel arguments (watch)

    def ran(self, forward=None, backward=None):
        """problem.ran(forward="fa4", backward="fa2"): the engine (kernel, backend) that
        served each pass, when the adapter's library dispatches them separately. The reply
        carries them ("engines"), the verdict shows them, and a backward that ran on its own
        engine gets its own buckets: a forward / backward dispatch mismatch is seen as one."""
        if forward is not None:
            self.engines["forward"] = str(forward)
        if backward is not None:
            self.engines["backward"] = str(backward)

    @contextlib.contextmanager
    def kernel_call(self):
        """with problem.kernel_call(): wraps the call of the kernel under test. In a worker
        served with marks_kernel=True, an exception raised inside such a block is the
        kernel's (a crash finding) and one raised anywhere else in the adapter is the
        adapter's own error (an error verdict: no verdict on the kernel)."""
        try:
            yield
        except BaseException:
            self.kernel_raised = True
            raise

    def watch(self, **tensors):
        """problem.watch(k=k16, ...): tensors of the adapter's own (converted, transposed)
        that it passes to the kernel under test, named by the protocol's input they carry
        (q k v do o lse). Call it before the kernel call: each is cloned now and compared
        with its clone when the kernel returns; a changed one is an input_mutation finding
        (input_check.py). The package's own arguments are watched without this."""
        from . import input_check

        for name in tensors:
            if name not in input_check.NAMES:
                raise ValueError("watch: %r is not an input name (%s)" % (name, " ".join(input_check.NAMES)))
        self.watched.update(input_check.snapshot(tensors))

    def diagonal(self, b, i):
        """The key column row i of sequence b is aligned with."""
        if self.align == "bottom_right":
            return i + self.seqlens_kv[b] - self.seqlens_q[b]
        return i

    def visible(self, b, i, j):
        """Row i of sequence b sees key j (plugin.h's rule, which the harness's oracle
        specifies independently)."""
        if not (0 <= j < self.seqlens_kv[b]):
            return False
        d = self.diagonal(b, i)
        if self.causal and j > d:
            return False
        if self.window_left >= 0 and j < d - self.window_left:
            return False
        if self.window_right >= 0 and j > d + self.window_right:
            return False
        return True

    def visible_range(self, b, i):
        """(first, last) visible key of row i, or None when the row is fully masked."""
        lo, hi = 0, self.seqlens_kv[b] - 1
        d = self.diagonal(b, i)
        if self.causal:
            hi = min(hi, d)
        if self.window_left >= 0:
            lo = max(lo, d - self.window_left)
        if self.window_right >= 0:
            hi = min(hi, d + self.window_right)
        return (lo, hi) if lo <= hi else None

    def __repr__(self):
        return "Problem(%s b%d h%d/%d s%d/%d d%d/%d %s%s)" % (
            self.dtype, self.batch, self.heads_q, self.heads_kv, self.seqlen_q, self.seqlen_kv,
            self.head_dim_qk, self.head_dim_v, self.mask, " bwd" if self.backward else "")
