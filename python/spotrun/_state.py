"""Flatten a nested training state into tensors + JSON, and back.

DESIGN
    A training state is a tree of dicts, lists and tuples whose leaves are
    tensors (torch or numpy) and plain Python values.  Saving splits it in
    two:

      * every tensor leaf becomes one named buffer handed to the C engine
        (zero-copy: its data pointer is registered, nothing is cloned unless
        the tensor is not contiguous);
      * everything else becomes one JSON document (the checkpoint's user
        metadata) in which each tensor leaf is replaced by a reference to
        its buffer name.

    JSON cannot hold tuples, non-string dict keys, bytes, NaN or integers
    outside int64 (the C side parses with jansson), so those are written as
    tagged objects: a JSON object with the reserved key "__spotrun__" whose
    value names the type.  A user dict that happens to contain the reserved
    key is itself written as a tagged "dict", so decoding is unambiguous:

      tag        fields                      decodes to
      tuple      items: [v...]               tuple
      dict       items: [[k, v]...]          dict (keys may be any value)
      bytes      b64: str                    bytes
      bytearray  b64: str                    bytearray
      float      v: "nan" | "inf" | "-inf"   float
      int        v: decimal str              int outside [-2^63, 2^63)
      npscalar   dtype: str, v: value        numpy scalar (np.float32 ...)
      tdtype     v: "float32" ...            torch.dtype
      tensor     name, dtype, shape, device  torch.Tensor
      ndarray    name, dtype, shape          numpy.ndarray

    Restore is the reverse, done in two steps so that the caller's
    containers are not touched until the data has been read and verified:
    plan_restore() decides, for every tensor in the checkpoint, which
    buffer its bytes land in (the caller's own tensor when it is a CPU,
    contiguous tensor of the same dtype and shape -- zero copy -- else a
    fresh one), and Plan.commit() then performs the copies that could not
    be zero-copy and mirrors the decoded tree into the caller's dicts and
    lists, keeping their identity so that references held elsewhere (a
    model's state_dict tensors, an optimizer's param_groups) stay valid.
"""

import base64
import math
import re
import sys

TAG = "__spotrun__"
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# safetensors dtype name -> (torch dtype attribute, numpy dtype name, size);
# the dtypes libspotckpt accepts (enum spotckpt_dtype).
DTYPES = {
    "BOOL": ("bool", "bool", 1),
    "U8": ("uint8", "uint8", 1),
    "I8": ("int8", "int8", 1),
    "I16": ("int16", "int16", 2),
    "F16": ("float16", "float16", 2),
    "BF16": ("bfloat16", None, 2),
    "I32": ("int32", "int32", 4),
    "F32": ("float32", "float32", 4),
    "I64": ("int64", "int64", 8),
    "F64": ("float64", "float64", 8),
    # torch has no uint16/32/64 before 2.3; numpy does (its RNG state is a
    # uint32 array)
    "U16": (None, "uint16", 2),
    "U32": (None, "uint32", 4),
    "U64": (None, "uint64", 8),
}
_TORCH_TO_ST = {v[0]: k for k, v in DTYPES.items() if v[0]}
_NP_TO_ST = {v[1]: k for k, v in DTYPES.items() if v[1]}
# Checkpoints written before U16/U32/U64 existed in libspotckpt stored
# numpy's unsigned arrays bit for bit as the signed type of the same width,
# with the numpy type in the metadata's "dtype"; they still restore.
_NP_LEGACY_ST = {"uint16": "I16", "uint32": "I32", "uint64": "I64"}
_TDTYPE_CACHE = {}   # torch.dtype -> (name, safetensors dtype or None)
_NAME_OK = re.compile(r"[ !#-\[\]-~]{1,240}")
_NAME_BAD = re.compile(r"[^ !#-\[\]-~]")


class StateError(TypeError):
    """A value in the state cannot be checkpointed; names the path."""


class MetadataError(ValueError):
    """A checkpoint's metadata does not decode into a state (unknown tag,
    a dtype that is not one, a tensor the manifest lacks, another writer's
    format).  restore() skips such a checkpoint for the previous one."""


def _torch_dtype(name, any_dtype=False):
    """torch.<name>, only if it is a real torch.dtype (and, unless
    any_dtype, one a checkpoint can hold): never another attribute of the
    torch module, such as torch.load."""
    import torch
    if not isinstance(name, str) or (not any_dtype
                                     and name not in _TORCH_TO_ST):
        raise MetadataError("%r is not a checkpointable torch dtype" % (name,))
    v = getattr(torch, name, None)
    if not isinstance(v, torch.dtype):
        raise MetadataError("%r is not a torch dtype" % (name,))
    return v


def _np_dtype(name):
    """numpy.dtype(name) for the numpy dtypes a checkpoint can hold."""
    import numpy as np
    if not isinstance(name, str) or name not in _NP_TO_ST:
        raise MetadataError("%r is not a checkpointable numpy dtype" % (name,))
    return np.dtype(name)


def _is_torch_tensor(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _is_ndarray(x):
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def _is_npscalar(x):
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.generic)


def _is_torch_dtype(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.dtype)


def _path_str(path):
    return "".join("[%r]" % (p,) for p in path) or "<root>"


class TensorRef:
    """One tensor to save: its buffer name and where its bytes live.

    `keep` holds the Python object owning the memory at `ptr` (the tensor
    itself, or a contiguous copy made for a strided one); it must stay
    referenced while the engine has it registered.  `device` is "cpu", or
    "cuda" when `ptr` is memory of the current CUDA device."""

    __slots__ = ("name", "dtype", "shape", "nbytes", "ptr", "keep", "device")

    def __init__(self, name, dtype, shape, nbytes, ptr, keep, device):
        self.name = name
        self.dtype = dtype
        self.shape = tuple(shape)
        self.nbytes = nbytes
        self.ptr = ptr
        self.keep = keep
        self.device = device


class _Encoder:
    def __init__(self, cuda_direct):
        self.tensors = []
        self.names = set()
        self.cuda_direct = cuda_direct

    def _name(self, path):
        base = ".".join(map(str, path)) or "tensor"
        if not _NAME_OK.fullmatch(base):
            # libspotckpt names: 1..255 bytes of printable ASCII, no '"'
            # or '\\'; keep room for a "~N" suffix
            base = _NAME_BAD.sub("_", base)[:240] or "tensor"
        name, n = base, 1
        while name in self.names:
            name = "%s~%d" % (base, n)
            n += 1
        self.names.add(name)
        return name

    def _key(self, k, path):
        return self.enc(k, path + ("<key>",))

    def enc(self, x, path):
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, int):
            if INT64_MIN <= x <= INT64_MAX:
                return int(x)
            return {TAG: "int", "v": str(int(x))}
        if isinstance(x, float):
            if math.isfinite(x):
                return float(x)
            return {TAG: "float", "v": repr(float(x))}
        if isinstance(x, dict):
            if all(isinstance(k, str) for k in x) and TAG not in x:
                return {k: self.enc(v, path + (k,)) for k, v in x.items()}
            return {TAG: "dict",
                    "items": [[self._key(k, path), self.enc(v, path + (k,))]
                              for k, v in x.items()]}
        if isinstance(x, list):
            return [self.enc(v, path + (i,)) for i, v in enumerate(x)]
        if isinstance(x, tuple):
            return {TAG: "tuple",
                    "items": [self.enc(v, path + (i,))
                              for i, v in enumerate(x)]}
        if isinstance(x, bytes):
            return {TAG: "bytes", "b64": base64.b64encode(x).decode()}
        if isinstance(x, bytearray):
            return {TAG: "bytearray", "b64": base64.b64encode(x).decode()}
        if _is_torch_tensor(x):
            return self._torch(x, path)
        if _is_ndarray(x):
            return self._numpy(x, path)
        if _is_npscalar(x):
            if x.dtype.name not in _NP_TO_ST:
                raise StateError("cannot checkpoint numpy scalar of dtype %s "
                                 "at %s" % (x.dtype, _path_str(path)))
            return {TAG: "npscalar", "dtype": x.dtype.name,
                    "v": self.enc(x.item(), path)}
        if _is_torch_dtype(x):
            return {TAG: "tdtype", "v": str(x).replace("torch.", "")}
        raise StateError("cannot checkpoint a value of type %s at %s "
                         "(supported: tensors, numpy arrays, dict, list, "
                         "tuple, str, int, float, bool, None, bytes)"
                         % (type(x).__name__, _path_str(path)))

    def _torch(self, t, path):
        torch = sys.modules["torch"]
        info = _TDTYPE_CACHE.get(t.dtype)
        if info is None:
            dname = str(t.dtype).replace("torch.", "")
            info = _TDTYPE_CACHE[t.dtype] = (dname, _TORCH_TO_ST.get(dname))
        dname, st = info
        if st is None:
            raise StateError("tensor dtype %s at %s has no safetensors "
                             "equivalent" % (t.dtype, _path_str(path)))
        if t.layout is not torch.strided:
            raise StateError("%s tensor at %s is not supported (only dense "
                             "tensors)" % (t.layout, _path_str(path)))
        # t itself is registered (no detach(): data_ptr() does not care
        # about autograd, and a new Python object per tensor costs time)
        src, device, devname = t, "cpu", "cpu"
        if t.is_cuda:
            devname = str(t.device)
            if self.cuda_direct and \
                    t.get_device() == torch.cuda.current_device():
                device = "cuda"
            else:
                src = t.detach().cpu()
        elif not t.is_cpu:
            devname = str(t.device)
            src = t.detach().cpu()
        if not src.is_contiguous():
            src = src.detach().contiguous()
        name = self._name(path)
        shape = list(src.shape)
        self.tensors.append(TensorRef(name, st, shape,
                                      src.numel() * src.element_size(),
                                      src.data_ptr(), src, device))
        return {TAG: "tensor", "name": name, "dtype": dname,
                "shape": shape, "device": devname}

    def _numpy(self, a, path):
        st = _NP_TO_ST.get(a.dtype.name)
        if st is None:
            raise StateError("numpy dtype %s at %s has no safetensors "
                             "equivalent" % (a.dtype, _path_str(path)))
        # (not np.ascontiguousarray: it turns a 0-d array into 1-d)
        src = a if a.flags.c_contiguous else a.copy(order="C")
        if not a.dtype.isnative:   # stored, and restored, little-endian
            src = src.astype(a.dtype.newbyteorder("="))
        name = self._name(path)
        self.tensors.append(TensorRef(name, st, src.shape, src.nbytes,
                                      src.ctypes.data, src, "cpu"))
        return {TAG: "ndarray", "name": name, "dtype": a.dtype.name,
                "shape": list(a.shape)}


def encode(state, cuda_direct=False):
    """Split `state` into (json_tree, [TensorRef]).

    Raises StateError naming the path of the first value that cannot be
    checkpointed.  With cuda_direct, CUDA tensors are passed as device
    pointers; otherwise they are copied to the host first."""
    e = _Encoder(cuda_direct)
    tree = e.enc(state, ())
    return tree, e.tensors


# --------------------------------------------------------------------------
# restore

class Plan:
    """The result of plan_restore(): where each saved tensor's bytes go.

    buffers: name -> (ptr, nbytes, owner, device) for every tensor the
    metadata refers to; device is "cpu" or "cuda".  scratch: the names
    whose buffer was made for this restore (a failed read need not keep
    their old bytes).  commit(state) applies the decoded tree to `state`:
    call it only after every buffer has been filled."""

    def __init__(self, value, buffers, copies, moved, scratch=()):
        self.value = value
        self.buffers = buffers
        self.scratch = set(scratch)
        self._copies = copies
        self._moved = moved

    def commit(self, state):
        for dst, src in self._copies:
            if _is_torch_tensor(dst):
                dst.copy_(src)
            else:
                dst[...] = src
        value = _resolve(self.value) if self._moved else self.value
        if _mirror(state, value) is not state:
            raise TypeError("the checkpoint holds a %s, cannot restore it "
                            "into a %s" % (type(value).__name__,
                                           type(state).__name__))
        return state


def _mirror(dst, src):
    """Make container `dst` equal to `src` in place; returns the object to
    store in the parent (dst itself when it could be kept)."""
    if isinstance(dst, dict) and isinstance(src, dict):
        for k in [k for k in dst if k not in src]:
            del dst[k]
        for k, v in src.items():
            dst[k] = _mirror(dst[k], v) if k in dst else v
        return dst
    if isinstance(dst, list) and isinstance(src, list):
        if len(dst) == len(src):
            for i, v in enumerate(src):
                dst[i] = _mirror(dst[i], v)
        else:
            dst[:] = src
        return dst
    return src


class _Decoder:
    def __init__(self, infos, cuda_direct):
        self.infos = infos  # name -> (dtype, shape) from the manifest
        self.cuda_direct = cuda_direct
        self.buffers = {}
        self.scratch = set()  # buffers made for this restore (not the caller's)
        self.copies = []
        self.moved = False

    def dec(self, x, old):
        if isinstance(x, list):
            olds = old if isinstance(old, list) and len(old) == len(x) else None
            return [self.dec(v, olds[i] if olds else None)
                    for i, v in enumerate(x)]
        if not isinstance(x, dict):
            return x
        tag = x.get(TAG)
        if tag is None:
            o = old if isinstance(old, dict) else {}
            return {k: self.dec(v, o.get(k)) for k, v in x.items()}
        if tag == "dict":
            o = old if isinstance(old, dict) else {}
            out = {}
            for k, v in x["items"]:
                key = self.dec(k, None)
                out[key] = self.dec(v, o.get(key))
            return out
        if tag == "tuple":
            items = x["items"]
            olds = old if isinstance(old, tuple) and len(old) == len(items) \
                else (None,) * len(items)
            return tuple(self.dec(v, o) for v, o in zip(items, olds))
        if tag == "bytes":
            return base64.b64decode(x["b64"])
        if tag == "bytearray":
            return bytearray(base64.b64decode(x["b64"]))
        if tag == "float":
            return float(x["v"])
        if tag == "int":
            return int(x["v"])
        if tag == "npscalar":
            return _np_dtype(x["dtype"]).type(self.dec(x["v"], None))
        if tag == "tdtype":
            return _torch_dtype(x["v"], any_dtype=True)
        if tag == "tensor":
            return self._torch(x, old)
        if tag == "ndarray":
            return self._numpy(x, old)
        raise MetadataError("checkpoint metadata has unknown tag %r" % (tag,))

    def _info(self, x):
        name = x["name"]
        if name not in self.infos:
            raise MetadataError("checkpoint metadata refers to tensor %r "
                                "which is not in the manifest" % (name,))
        return name, self.infos[name]

    def _torch(self, x, old):
        import torch
        name, (st, shape) = self._info(x)
        dtype = _torch_dtype(x["dtype"])
        if _TORCH_TO_ST.get(x["dtype"]) != st or list(shape) != x["shape"]:
            raise MetadataError("tensor %r: metadata says %s%s, manifest says "
                             "%s%s" % (name, x["dtype"], x["shape"], st,
                                       list(shape)))
        same = (_is_torch_tensor(old) and old.dtype == dtype
                and list(old.shape) == list(shape))
        if same and old.is_contiguous() and (
                old.device.type == "cpu" or self._direct_cuda(old)):
            buf = old.detach()
            self.buffers[name] = (buf.data_ptr(),
                                  buf.numel() * buf.element_size(), buf,
                                  old.device.type)
            return old
        buf = torch.empty(shape, dtype=dtype)
        self.buffers[name] = (buf.data_ptr(),
                              buf.numel() * buf.element_size(), buf, "cpu")
        self.scratch.add(name)
        if same:
            self.copies.append((old.detach(), buf))
            return old
        dev = x.get("device", "cpu")
        if dev.startswith("cuda") and torch.cuda.is_available():
            self.moved = True
            return _LazyMove(buf, dev)
        return buf

    def _direct_cuda(self, t):
        torch = sys.modules["torch"]
        return (self.cuda_direct and t.device.type == "cuda"
                and t.device.index == torch.cuda.current_device())

    def _numpy(self, x, old):
        import numpy as np
        name, (st, shape) = self._info(x)
        dtype = _np_dtype(x["dtype"])
        stored_as = (_NP_TO_ST.get(dtype.name), _NP_LEGACY_ST.get(dtype.name))
        if st not in stored_as or list(shape) != x["shape"]:
            raise MetadataError("array %r: metadata says %s%s, manifest says "
                             "%s%s" % (name, x["dtype"], x["shape"], st,
                                       list(shape)))
        same = (_is_ndarray(old) and old.dtype == dtype
                and list(old.shape) == list(shape) and old.flags.writeable)
        if same and old.flags.c_contiguous:
            self.buffers[name] = (old.ctypes.data, old.nbytes, old, "cpu")
            return old
        buf = np.empty(shape, dtype=dtype)
        self.buffers[name] = (buf.ctypes.data, buf.nbytes, buf, "cpu")
        self.scratch.add(name)
        if same:
            self.copies.append((old, buf))
            return old
        return buf


class _LazyMove:
    """A host tensor to be moved to its saved CUDA device at commit."""

    def __init__(self, buf, device):
        self.buf = buf
        self.device = device


def _resolve(v):
    if isinstance(v, _LazyMove):
        return v.buf.to(v.device)
    if isinstance(v, dict):
        return {k: _resolve(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_resolve(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_resolve(x) for x in v)
    return v


def plan_restore(tree, infos, state, cuda_direct=False):
    """Decide where each tensor of a checkpoint goes.

    tree: the decoded JSON metadata; infos: name -> (safetensors dtype,
    shape) as listed in the manifest; state: the caller's current state
    (its tensors are reused when they match; with cuda_direct, CUDA tensors
    of the current device are filled directly).  Does not modify `state`
    itself, only the contents of the tensors it reuses."""
    d = _Decoder(infos, cuda_direct)
    try:
        value = d.dec(tree, state)
    except MetadataError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError,
            OverflowError) as exc:
        # a field missing or of the wrong type: still damaged metadata
        raise MetadataError("checkpoint metadata does not decode: %s: %s"
                            % (type(exc).__name__, exc)) from None
    return Plan(value, d.buffers, d.copies, d.moved, d.scratch)
