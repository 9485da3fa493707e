"""ctypes bindings of the C API (include/fmm*.h) in libfmm.so, installed beside this file.

The structs are not copied by hand: _fmm_layout.so (python/fmm/_layout.c, compiled against the
same headers) gives each struct's size and its fields' offsets and types, and CStruct reads and
writes them by name.
"""
import ctypes
import os

_here = os.path.dirname(os.path.abspath(__file__))
lib = ctypes.CDLL(os.path.join(_here, "libfmm.so"))
_layout = ctypes.CDLL(os.path.join(_here, "_fmm_layout.so"))


class _Field(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("offset", ctypes.c_long), ("type", ctypes.c_char),
                ("bytes", ctypes.c_long)]


class _Struct(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("size", ctypes.c_long),
                ("fields", ctypes.POINTER(_Field))]


_CTYPES = {b"d": ctypes.c_double, b"i": ctypes.c_int, b"l": ctypes.c_long,
           b"Q": ctypes.c_ulonglong}


def _read_layouts():
    _layout.fmm_py_structs.restype = ctypes.POINTER(_Struct)
    table = _layout.fmm_py_structs()
    layouts = {}
    k = 0
    while table[k].name:
        s = table[k]
        fields = {}
        j = 0
        while s.fields[j].name:
            f = s.fields[j]
            ct = _CTYPES[f.type]
            count = f.bytes // ctypes.sizeof(ct)
            fields[f.name.decode()] = (f.offset, ct, count)
            j += 1
        layouts[s.name.decode()] = (s.size, fields)
        k += 1
    return layouts


LAYOUTS = _read_layouts()


class CStruct:
    """A C struct of the API by name: its bytes, and its fields read and written by name."""

    def __init__(self, name):
        self.name = name
        self.size, self.fields = LAYOUTS[name]
        self.buf = (ctypes.c_char * self.size)()

    @property
    def ptr(self):
        return ctypes.addressof(self.buf)

    def _view(self, key):
        offset, ct, count = self.fields[key]
        return (ct * count).from_buffer(self.buf, offset), count

    def __getitem__(self, key):
        v, count = self._view(key)
        return v[0] if count == 1 else list(v)

    def __setitem__(self, key, value):
        v, count = self._view(key)
        if count == 1:
            v[0] = value
        else:
            v[:] = value

    def as_dict(self):
        return {k: self[k] for k in self.fields}


_vp, _l, _d, _i = ctypes.c_void_p, ctypes.c_long, ctypes.c_double, ctypes.c_int


def _proto(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_cs = ctypes.c_char_p
fmm_version = _proto("fmm_version", _cs)
fmm_build_info = _proto("fmm_build_info", _cs)
fmm_strerror = _proto("fmm_strerror", _cs, _i)
fmm_default_opts = _proto("fmm_default_opts", None, _vp)
fmm_makeplan = _proto("fmm_makeplan", _i, _vp, _vp, _vp)
fmm_makeplan_cell = _proto("fmm_makeplan_cell", _i, _vp, _vp, _vp)
fmm_setpts = _proto("fmm_setpts", _i, _vp, _l, _vp)
fmm_execute = _proto("fmm_execute", _i, _vp, _vp, _vp, _vp, _vp, _vp)
fmm_set_exclusions = _proto("fmm_set_exclusions", _i, _vp, _l, _vp)
fmm_get_info = _proto("fmm_get_info", _i, _vp, _vp)
fmm_destroy = _proto("fmm_destroy", None, _vp)
fmm_cuda_device_count = _proto("fmm_cuda_device_count", _i)
fmm_cuda_setptsf = _proto("fmm_cuda_setptsf", _i, _vp, _l, _vp, _vp)
fmm_cuda_forcesf = _proto("fmm_cuda_forcesf", _i, _vp, _vp, _vp, _d, _vp, _vp, _vp)
fmm_direct = _proto("fmm_direct", _i, _l, _vp, _vp, _vp, _vp, _vp, _vp, _i)
fmm_ewald = _proto("fmm_ewald", _i, _l, _vp, _vp, _vp, _d, _vp, _vp, _vp, _vp, _i)
fmm_ewald_cell = _proto("fmm_ewald_cell", _i, _l, _vp, _vp, _vp, _d, _vp, _vp, _vp, _vp, _i)

bldtt_default_opts = _proto("bldtt_default_opts", None, _vp)
bldtt_makeplan = _proto("bldtt_makeplan", _i, _vp, _vp)
bldtt_setpts = _proto("bldtt_setpts", _i, _vp, _l, _vp, _l, _vp)
bldtt_execute = _proto("bldtt_execute", _i, _vp, _vp, _vp, _vp)
bldtt_get_info = _proto("bldtt_get_info", _i, _vp, _vp)
bldtt_destroy = _proto("bldtt_destroy", None, _vp)
bldtt_strerror = _proto("bldtt_strerror", _cs, _i)
bldtt_direct = _proto("bldtt_direct", _i, _vp, _l, _vp, _vp, _l, _vp, _vp, _vp)
bldtt_kernel_from_name = _proto("bldtt_kernel_from_name", _i, _cs, _vp)
bldtt_kernel_default_param = _proto("bldtt_kernel_default_param", _d, _i)

fgt_default_opts = _proto("fgt_default_opts", None, _vp)
fgt_makeplan = _proto("fgt_makeplan", _i, _i, _d, _vp, _vp)
fgt_setpts = _proto("fgt_setpts", _i, _vp, _l, _vp, _l, _vp)
fgt_execute = _proto("fgt_execute", _i, _vp, _vp, _vp)
fgt_get_info = _proto("fgt_get_info", _i, _vp, _vp)
fgt_destroy = _proto("fgt_destroy", None, _vp)
fgt_strerror = _proto("fgt_strerror", _cs, _i)
fgt_direct = _proto("fgt_direct", _i, _i, _d, _l, _vp, _vp, _l, _vp, _vp, _i)

fmm_rbf_default_opts = _proto("fmm_rbf_default_opts", None, _vp)
fmm_rbf_makeplan = _proto("fmm_rbf_makeplan", _i, _vp, _vp)
fmm_rbf_setpts = _proto("fmm_rbf_setpts", _i, _vp, _l, _vp)
fmm_rbf_execute = _proto("fmm_rbf_execute", _i, _vp, _vp, _vp, _vp, _vp)
fmm_rbf_eval = _proto("fmm_rbf_eval", _i, _vp, _vp, _d, _l, _vp, _vp)
fmm_rbf_matvec = _proto("fmm_rbf_matvec", _i, _vp, _vp, _vp, _vp)
fmm_rbf_destroy = _proto("fmm_rbf_destroy", None, _vp)
fmm_rbf_strerror = _proto("fmm_rbf_strerror", _cs, _i)
