"""A logical (B, H, S, D) view of one tensor in the shared region, element by element,
without numpy: the address rule of plugin.h (plain, ragged thd, paged KV)."""
from . import storage as st


class HostTensor:
    def __init__(self, name, desc, region, base):
        """desc: the tensor's descriptor; region: the mapped bytes (mmap / memoryview);
        base: byte offset of the tensor's buffer (its first guard byte) in region."""
        self.name = name
        self.storage = desc["storage"]
        self.shape = tuple(desc["shape"])
        self.strides = tuple(desc["strides"])
        self.elem = st.ELEM_BYTES[self.storage]
        self.region = region
        self.base = base  # byte offset of the buffer's front guard
        self.origin = base + desc["offset"]  # byte offset of element (0,0,0,0)
        self.buffer_elems = desc["buffer_elems"]
        self.descale = desc.get("descale", 1.0)
        self.token_start = desc.get("token_start")
        self.page_table = desc.get("page_table")
        self.page_size = desc.get("page_size", 0)
        self.pages_per_seq = desc.get("pages_per_seq", 0)
        self.mx = desc.get("mx_scale")  # mxfp8 scales' descriptor (not applied by get)

    def element_offset(self, b, h, s, d):
        """Elements from element (0,0,0,0) to logical (b, h, s, d)."""
        sb, sh, ss, _ = self.strides
        if self.token_start is not None:
            return (self.token_start[b] + s) * ss + h * sh + d
        if self.page_table is not None:
            page = self.page_table[b * self.pages_per_seq + s // self.page_size]
            return page * sb + (s % self.page_size) * ss + h * sh + d
        return b * sb + s * ss + h * sh + d

    def get(self, b, h, s, d=0):
        """The logical value (stored * descale)."""
        off = self.origin + self.element_offset(b, h, s, d) * self.elem
        return st.load(self.storage, self.region, off) * self.descale

    def set(self, b, h, s, d, value):
        """Store value / descale, rounded once to the storage format."""
        off = self.origin + self.element_offset(b, h, s, d) * self.elem
        st.store(self.storage, self.region, off, value / self.descale)

    def rows(self, b, h, length):
        """[[values of d] for s < length] of head h of sequence b."""
        D = self.shape[3]
        return [[self.get(b, h, s, d) for d in range(D)] for s in range(length)]
