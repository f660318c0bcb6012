"""ctypes declarations for libspotckpt (include/spotrun/ckpt.h).

Finding the library needs no install step:
  1. $SPOTRUN_LIB, when set: the path of libspotckpt.so (or a directory
     holding it), and nothing else;
  2. otherwise <repo>/build/lib/libspotckpt.so, relative to this package
     (python/spotrun/ -> ../../build/lib/), i.e. what `make` builds;
  3. after `make install`, PREFIX/lib/libspotckpt.so (spotrun/_install.py,
     written by the install, names the directory).
The structs below mirror the header field for field; the header's
SPOTCKPT_ABI_VERSION is checked against the loaded library.
"""

import ctypes
import os
import threading

ABI_VERSION = 3
MAX_NDIM = 16
LIBNAME = "libspotckpt.so"

# enum spotckpt_errcode (returned negated)
EPARSE, ECHECKSUM, ECORRUPT = 10001, 10002, 10003
ETIMEOUT, ENOTFOUND, ECONFLICT, EUNSUPPORTED = 10005, 10006, 10007, 10008

# enum spotckpt_dtype, by safetensors name
DTYPE_IDS = {"F32": 0, "F16": 1, "BF16": 2, "F64": 3, "I64": 4, "I32": 5,
             "I16": 6, "I8": 7, "U8": 8, "BOOL": 9, "U16": 10, "U32": 11,
             "U64": 12}
DTYPE_NAMES = {v: k for k, v in DTYPE_IDS.items()}

DEV_CPU, DEV_CUDA = 0, 1
BACKPRESSURE = {"coalesce": 0, "skip": 1, "block": 2}
OUTCOMES = {0: "staged", 1: "skipped", 2: "coalesced"}
SAVE_LAZY = 0x1
REMOTE_KEEP_ALL = -1
REMOTE_NO_BACKFILL = 0x1
FINAL_STORE_ONLY = 0x1
OPEN_VERIFY = 0x1
DEST_SCRATCH = 0x1
NEWEST = -1

_c = ctypes
_i32, _u32, _i64, _u64 = _c.c_int32, _c.c_uint32, _c.c_int64, _c.c_uint64


class Opts(_c.Structure):
    _fields_ = [("dir", _c.c_char_p), ("keep", _i32),
                ("copy_threads", _i32), ("staging_bytes", _u64),
                ("shard_bytes", _u64), ("backpressure", _i32),
                ("direct_io", _i32), ("io_depth", _i32),
                ("io_chunk_bytes", _u32), ("commit_timeout_ms", _i64),
                ("dirs", _c.POINTER(_c.c_char_p)), ("ndirs", _u32),
                ("pad_", _u32)]


class Background(_c.Structure):
    _fields_ = [("nice", _i32), ("pad_", _i32), ("writer_cpus", _u64),
                ("copy_cpus", _u64), ("write_bytes_per_s", _u64)]


class Stats(_c.Structure):
    _fields_ = [(n, _u64) for n in (
        "saves_requested", "saves_staged", "saves_committed",
        "saves_skipped", "saves_coalesced", "saves_failed")] + \
        [(n, _i64) for n in ("last_stall_ns", "max_stall_ns",
                             "total_stall_ns", "last_copy_ns",
                             "last_write_ns")] + \
        [(n, _u64) for n in ("last_write_bytes", "bytes_written",
                             "staging_bytes", "state_bytes")] + \
        [("last_saved_step", _i64)] + \
        [(n, _i32) for n in ("last_error", "direct_io_used", "uring_used",
                             "cuda_loaded")]


class TensorInfo(_c.Structure):
    _fields_ = [("name", _c.c_char_p), ("dtype", _i32), ("ndim", _i32),
                ("shape", _i64 * MAX_NDIM), ("nbytes", _u64),
                ("xxh3", _u64), ("shard", _i32), ("pad_", _i32),
                ("offset", _u64)]


class Dest(_c.Structure):
    _fields_ = [("index", _i64), ("ptr", _c.c_void_p), ("len", _u64),
                ("device", _i32), ("flags", _u32)]


class Entry(_c.Structure):
    _fields_ = [("step", _i64), ("time_ns", _i64), ("bytes", _u64),
                ("state", _i32), ("ntensors", _i32)]


class RemoteStats(_c.Structure):
    _fields_ = [(n, _i64) for n in ("uploaded_step", "uploading_step",
                                    "pending_step")] + \
        [(n, _u64) for n in ("uploads_committed", "uploads_failed",
                             "uploads_superseded", "bytes_uploaded")] + \
        [("last_upload_ns", _i64), ("last_error", _i32), ("enabled", _i32)] + \
        [(n, _i64) for n in ("local_step", "local_time_ns", "store_time_ns",
                             "next_retry_ns")] + \
        [("retries", _u32), ("behind", _u32)]


_P = _c.c_void_p
_PROTOS = {
    "spotckpt_opts_init": (None, [_c.POINTER(Opts)]),
    "spotckpt_open": (_c.c_int, [_c.POINTER(Opts), _c.POINTER(_P)]),
    "spotckpt_close": (_c.c_int, [_P]),
    "spotckpt_close_ex": (_c.c_int, [_P, _i64]),
    "spotckpt_register": (_c.c_int, [_P, _c.c_char_p, _P, _i32, _i32,
                                     _c.POINTER(_i64), _i32]),
    "spotckpt_clear": (_c.c_int, [_P]),
    "spotckpt_prepare": (_c.c_int, [_P]),
    "spotckpt_prefault": (_c.c_int, [_P, _i64]),
    "spotckpt_save": (_c.c_int, [_P, _i64, _c.c_char_p, _u32,
                                 _c.POINTER(_i32)]),
    "spotckpt_wait_staged": (_c.c_int, [_P]),
    "spotckpt_wait": (_c.c_int, [_P]),
    "spotckpt_save_final": (_c.c_int, [_P, _i64, _c.c_char_p, _i64,
                                       _c.POINTER(_i32)]),
    "spotckpt_save_final_ex": (_c.c_int, [_P, _i64, _c.c_char_p, _i64, _u32,
                                          _c.POINTER(_i32)]),
    "spotckpt_final_manifest": (_c.c_int, [_P, _i64, _c.POINTER(_P),
                                           _c.POINTER(_c.c_size_t)]),
    "spotckpt_final_keep": (_c.c_int, [_P, _i64, _c.c_char_p]),
    "spotckpt_abandon_final": (_c.c_int, [_P, _i64]),
    "spotckpt_last_saved_step": (_i64, [_P]),
    "spotckpt_last_error": (_c.c_int, [_P, _c.c_char_p, _c.c_size_t]),
    "spotckpt_stats": (_c.c_int, [_P, _c.POINTER(Stats)]),
    "spotckpt_set_background": (_c.c_int, [_P, _c.POINTER(Background)]),
    "spotckpt_reader_open": (_c.c_int, [_c.c_char_p, _i64, _i64, _u32,
                                        _c.POINTER(_P)]),
    "spotckpt_reader_close": (None, [_P]),
    "spotckpt_reader_step": (_i64, [_P]),
    "spotckpt_reader_time_ns": (_i64, [_P]),
    "spotckpt_reader_meta": (_c.c_char_p, [_P]),
    "spotckpt_reader_path": (_c.c_char_p, [_P]),
    "spotckpt_reader_ntensors": (_i64, [_P]),
    "spotckpt_reader_nbytes": (_u64, [_P]),
    "spotckpt_reader_tensor": (_c.c_int, [_P, _i64,
                                          _c.POINTER(TensorInfo)]),
    "spotckpt_reader_read_all": (_c.c_int, [_P, _c.POINTER(Dest),
                                            _c.c_size_t]),
    "spotckpt_reader_read_all_with": (_c.c_int, [_P, _P, _c.POINTER(Dest),
                                                 _c.c_size_t]),
    "spotckpt_list": (_c.c_int, [_c.c_char_p, _c.POINTER(Entry),
                                 _c.c_size_t, _c.POINTER(_c.c_size_t)]),
    "spotckpt_verify": (_c.c_int, [_c.c_char_p, _i64, _c.POINTER(_i64)]),
    "spotckpt_set_remote": (_c.c_int, [_P, _c.c_char_p]),
    "spotckpt_set_remote_ex": (_c.c_int, [_P, _c.c_char_p, _i32, _u32]),
    "spotckpt_store_open": (_c.c_int, [_c.c_char_p, _c.POINTER(_P)]),
    "spotckpt_store_close": (None, [_P]),
    "spotckpt_store_put": (_c.c_int, [_P, _c.c_char_p, _c.c_char_p,
                                      _c.c_size_t]),
    "spotckpt_store_get": (_c.c_int, [_P, _c.c_char_p, _c.c_size_t,
                                      _c.POINTER(_P),
                                      _c.POINTER(_c.c_size_t)]),
    "spotckpt_store_list": (_c.c_int, [_P, _c.c_char_p, _c.POINTER(_P),
                                       _c.POINTER(_c.c_size_t)]),
    "spotckpt_store_del": (_c.c_int, [_P, _c.POINTER(_c.c_char_p),
                                      _c.c_size_t]),
    "spotckpt_free": (None, [_P]),
    "spotckpt_remote_wait": (_c.c_int, [_P, _i64, _i64, _c.POINTER(_i32)]),
    "spotckpt_remote_stats": (_c.c_int, [_P, _c.POINTER(RemoteStats),
                                         _c.c_char_p, _c.c_size_t]),
    "spotckpt_strerror": (_c.c_char_p, [_c.c_int]),
    "spotckpt_errmsg": (_c.c_char_p, []),
    "spotckpt_abi_version": (_i32, []),
    "spotckpt_progress_step": (_c.c_int, [_i64, _i64]),
    "spotckpt_progress_restored": (_c.c_int, [_i64]),
    "spotckpt_progress_restored_from": (_c.c_int, [_i64, _c.c_char_p]),
    "spotckpt_cuda_available": (_i32, []),
}


class LibraryNotFound(ImportError):
    """libspotckpt.so could not be located or loaded."""


def candidates():
    """The paths tried, in order, as (path, where-it-came-from)."""
    env = os.environ.get("SPOTRUN_LIB")
    if env:  # an explicit choice: never silently load another build
        path = os.path.join(env, LIBNAME) if os.path.isdir(env) else env
        return [(path, "$SPOTRUN_LIB")]
    out = []
    repo = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    out.append((os.path.join(repo, "build", "lib", LIBNAME),
                "the repository's build/lib"))
    try:
        from . import _install
    except ImportError:  # not installed: running from the repository
        _install = None
    if _install is not None:
        out.append((os.path.join(_install.LIBDIR, LIBNAME),
                    "the installed library (make install)"))
    return out


def _load():
    tried = []
    for path, why in candidates():
        if not os.path.exists(path):
            tried.append("%s (%s): not found" % (path, why))
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            tried.append("%s (%s): %s" % (path, why, exc))
            continue
        for name, (res, args) in _PROTOS.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise LibraryNotFound("%s does not export %s: rebuild it "
                                      "with `make`" % (path, name)) from None
            fn.restype = res
            fn.argtypes = args
        abi = lib.spotckpt_abi_version()
        if abi != ABI_VERSION:
            raise LibraryNotFound("%s has ABI version %d, this binding "
                                  "expects %d: rebuild with `make`"
                                  % (path, abi, ABI_VERSION))
        lib.path = path
        return lib
    raise LibraryNotFound(
        "libspotckpt.so not found; looked in:\n  " + "\n  ".join(tried) +
        "\nRun `make` in the spotrun repository, or set SPOTRUN_LIB to the "
        "path of libspotckpt.so.")


_lock = threading.Lock()
_lib = None


def lib():
    """The loaded library (loaded on first use; raises LibraryNotFound)."""
    global _lib
    with _lock:
        if _lib is None:
            _lib = _load()
        return _lib


class CheckpointError(OSError):
    """A libspotckpt call failed.

    .code is the library's (negative) return code; .errno is set when it is
    a negative errno (e.g. errno.ENOSPC), else None; str() has the
    library's words plus the detail naming the file, field or tensor."""

    def __init__(self, code, what, detail=""):
        self.code = code
        words = lib().spotckpt_strerror(code).decode(errors="replace")
        msg = "%s: %s" % (what, words)
        if detail:
            msg += " (%s)" % detail
        eno = -code if 0 < -code < 10000 else None
        super().__init__(eno, msg)
        self.errno = eno
        self.detail = detail

    def __str__(self):
        return self.strerror


def check(rc, what):
    """Raise CheckpointError for a negative rc, with this thread's errmsg."""
    if rc < 0:
        detail = lib().spotckpt_errmsg().decode(errors="replace")
        raise CheckpointError(rc, what, detail)
    return rc
