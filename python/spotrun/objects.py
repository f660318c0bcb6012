"""Single objects under a checkpoint URI (include/spotrun/ckpt.h,
spotckpt_store_*): the records the multi-rank checkpointer keeps next to
the ranks' checkpoints in an object store (spotrun.dist).  Same URIs,
credentials and retries as tier 3."""

import ctypes

from . import _lib


class ObjectStore:
    """put/get/list/delete of small objects under `uri` (s3://, gs://,
    az://, file://).  Keys are relative to the URI's prefix.  Errors
    raise CheckpointError naming the request; get() of a missing key
    returns None.  Thread-safe; close() (or a with block) frees it."""

    def __init__(self, uri):
        self.uri = str(uri)
        h = ctypes.c_void_p()
        _lib.check(_lib.lib().spotckpt_store_open(self.uri.encode(),
                                                  ctypes.byref(h)),
                   "cannot open the object store %s" % self.uri)
        self._h = h

    def close(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _lib.lib().spotckpt_store_close(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        self.close()

    def _handle(self):
        if not self._h:
            raise ValueError("ObjectStore %s is closed" % self.uri)
        return self._h

    def put(self, key, data):
        """Write `key` in one request (atomic: the old object or all of
        data)."""
        data = bytes(data)
        _lib.check(_lib.lib().spotckpt_store_put(
            self._handle(), key.encode(), data, len(data)),
            "cannot write %s/%s" % (self.uri, key))

    def get(self, key, max_bytes=1 << 24):
        """The bytes of `key`, or None when there is no such object."""
        lib = _lib.lib()
        out, n = ctypes.c_void_p(), ctypes.c_size_t(0)
        rc = lib.spotckpt_store_get(self._handle(), key.encode(), max_bytes,
                                    ctypes.byref(out), ctypes.byref(n))
        if rc == -_lib.ENOTFOUND:
            return None
        _lib.check(rc, "cannot read %s/%s" % (self.uri, key))
        try:
            return ctypes.string_at(out, n.value)
        finally:
            lib.spotckpt_free(out)

    def list(self, sub=""):
        """The keys that start with `sub`, sorted."""
        lib = _lib.lib()
        out, n = ctypes.c_void_p(), ctypes.c_size_t(0)
        _lib.check(lib.spotckpt_store_list(self._handle(), sub.encode(),
                                           ctypes.byref(out),
                                           ctypes.byref(n)),
                   "cannot list %s/%s" % (self.uri, sub))
        try:
            text = ctypes.string_at(out, n.value).decode(errors="replace")
        finally:
            lib.spotckpt_free(out)
        return [k for k in text.split("\n") if k]

    def delete(self, keys):
        """Delete `keys` (missing ones are not an error)."""
        keys = list(keys)
        if not keys:
            return
        arr = (ctypes.c_char_p * len(keys))(*[k.encode() for k in keys])
        _lib.check(_lib.lib().spotckpt_store_del(self._handle(), arr,
                                                 len(keys)),
                   "cannot delete %d object(s) under %s" % (len(keys),
                                                            self.uri))
