"""The pickle inside a PyTorch checkpoint, read without torch and as strictly as
``torch.load(weights_only=True)``.

Two passes over the (small) pickle bytes, nothing executed before both agree:

1. :func:`scan` walks the opcodes (``pickletools.genops``, which only parses) and refuses every
   opcode ``torch.load(weights_only=True)`` refuses (it interprets protocol-2 opcodes only: no
   ``STACK_GLOBAL``, ``FRAME``, ``INST``, ``OBJ``, ``EXT*``, ``PERSID``, ``NEWOBJ_EX``...), every
   ``GLOBAL`` outside :data:`ALLOWED` (a subset of torch's allowlist: what a state dict of dense
   tensors needs), and memo indices beyond the opcode count (the C unpickler sizes its memo
   table by the largest index, so ``LONG_BINPUT 2**32-1`` would allocate gigabytes).
2. :class:`RestrictedUnpickler` (a ``pickle.Unpickler``) resolves the same globals to inert
   stand-ins: the tensor-rebuild functions return :class:`TensorRecord` (storage, offset,
   shape, strides; no data read), storage types are :class:`StorageType` markers (not callable,
   not classes), dtypes are :class:`DtypeMarker`, ``collections.OrderedDict`` is itself. So a
   ``REDUCE`` can only call a rebuild function or ``OrderedDict``, a ``NEWOBJ`` only make an
   ``OrderedDict``, and a ``BUILD`` only set attributes of an ``OrderedDict`` (torch's
   ``state_dict()._metadata``); the records refuse ``BUILD``. ``persistent_load`` accepts only
   ``('storage', storage type, key, location, numel[, view])`` and returns a :class:`StorageRef`.

Where the data lies (zip members, legacy records) is :mod:`specbound.io.torch_files`' business.
"""

from __future__ import annotations

import io
import pickle
import pickletools
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Storage type name -> (element bytes, tensor dtype name). torch's typed storages, plus
#: ``UntypedStorage`` (bytes; ``_rebuild_tensor_v3`` then names the tensor's dtype).
STORAGE_TYPES: dict[str, tuple[int, str]] = {
    "DoubleStorage": (8, "float64"),
    "FloatStorage": (4, "float32"),
    "HalfStorage": (2, "float16"),
    "BFloat16Storage": (2, "bfloat16"),
    "LongStorage": (8, "int64"),
    "IntStorage": (4, "int32"),
    "ShortStorage": (2, "int16"),
    "CharStorage": (1, "int8"),
    "ByteStorage": (1, "uint8"),
    "BoolStorage": (1, "bool"),
    "ComplexDoubleStorage": (16, "complex128"),
    "ComplexFloatStorage": (8, "complex64"),
    "QInt8Storage": (1, "qint8"),
    "QUInt8Storage": (1, "quint8"),
    "QInt32Storage": (4, "qint32"),
    "QUInt4x2Storage": (1, "quint4x2"),
    "QUInt2x4Storage": (1, "quint2x4"),
    "UntypedStorage": (1, "uint8"),
}

#: torch dtype name -> element bytes (``torch.<name>`` globals, as ``_rebuild_tensor_v3`` uses).
DTYPES: dict[str, int] = {
    **{dt: size for size, dt in STORAGE_TYPES.values()},
    "uint16": 2,
    "uint32": 4,
    "uint64": 8,
    "complex32": 4,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
}

#: The opcodes ``torch.load(weights_only=True)`` interprets (torch/_weights_only_unpickler.py);
#: any other opcode is refused, as torch refuses it.
ALLOWED_OPCODES = frozenset(
    {
        "PROTO",
        "STOP",
        "GLOBAL",
        "NEWOBJ",
        "REDUCE",
        "BUILD",
        "APPEND",
        "APPENDS",
        "SETITEM",
        "SETITEMS",
        "MARK",
        "TUPLE",
        "TUPLE1",
        "TUPLE2",
        "TUPLE3",
        "NONE",
        "NEWFALSE",
        "NEWTRUE",
        "EMPTY_TUPLE",
        "EMPTY_LIST",
        "EMPTY_DICT",
        "EMPTY_SET",
        "BININT",
        "BININT1",
        "BININT2",
        "BINFLOAT",
        "BINUNICODE",
        "SHORT_BINSTRING",
        "BINPERSID",
        "BINGET",
        "LONG_BINGET",
        "BINPUT",
        "LONG_BINPUT",
        "LONG1",
    }
)

#: Globals torch's ``weights_only`` allows that this reader refuses as unsupported (quantized,
#: sparse, meta, nested, subclassed tensors...): refused with a "not supported" line, not a
#: "code execution" one.
TORCH_ONLY = frozenset(
    {
        "torch._utils._rebuild_qtensor",
        "torch._utils._rebuild_sparse_tensor",
        "torch._utils._rebuild_meta_tensor_no_storage",
        "torch._utils._rebuild_nested_tensor",
        "torch._utils._rebuild_wrapper_subclass",
        "torch._utils._rebuild_device_tensor_from_numpy",
        "torch._utils._rebuild_device_tensor_from_cpu_tensor",
        "torch._tensor._rebuild_from_type_v2",
        "torch.Size",
        "torch.device",
        "torch.Tensor",
        "torch.nn.parameter.Parameter",
        "torch.serialization._get_layout",
        "torch.per_tensor_affine",
        "torch.per_tensor_symmetric",
        "torch.per_channel_affine",
        "torch.per_channel_symmetric",
        "torch.per_channel_affine_float_qparams",
    }
)

#: Refuse a pickle larger than this (a state dict's pickle is ~100 bytes per tensor).
MAX_PICKLE_BYTES = 256 * 2**20


class Refused(Exception):
    """The pickle asks for something this reader does not do; ``str()`` is the reason (the
    caller prefixes the file)."""


class _Inert:
    """Base of every object the unpickler hands out for a global: no ``__dict__``, and a pickle
    ``BUILD`` on it is refused (``BUILD`` would otherwise set attributes, e.g. a function's
    ``__defaults__``, for the whole process)."""

    __slots__ = ()

    def __setstate__(self, state: Any) -> None:
        raise Refused(f"a BUILD on {self!r} (only OrderedDict attributes are accepted)")


@dataclass(frozen=True, slots=True)
class StorageType(_Inert):
    """``torch.<Name>Storage`` as an inert marker: element size and dtype name."""

    __setstate__ = _Inert.__setstate__  # dataclass(slots=True) would add one that sets fields

    name: str
    itemsize: int
    dtype: str


@dataclass(frozen=True, slots=True)
class DtypeMarker(_Inert):
    """``torch.<dtype>`` as an inert marker."""

    __setstate__ = _Inert.__setstate__  # dataclass(slots=True) would add one that sets fields

    name: str
    itemsize: int


@dataclass(frozen=True, slots=True)
class StorageRef(_Inert):
    """One ``persistent_load`` id: ``numel`` elements of ``stype`` under ``key``; a legacy view
    is ``view = (offset, numel)`` in elements of the root storage."""

    __setstate__ = _Inert.__setstate__  # dataclass(slots=True) would add one that sets fields

    stype: StorageType
    key: str
    numel: int
    view: tuple[int, int] | None = None


class _Rebuild(_Inert):
    """A tensor-rebuild function as the unpickler hands it out (callable, not a function: no
    attributes a ``BUILD`` could set)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., TensorRecord]) -> None:
        self.fn = fn

    def __call__(self, *args: Any) -> TensorRecord:
        return self.fn(*args)

    def __repr__(self) -> str:
        return f"torch._utils.{self.fn.__name__}"


class TensorRecord:
    """A tensor as the pickle describes it: ``shape`` and ``strides`` in elements, ``offset``
    into ``storage`` in elements of ``dtype`` (``itemsize`` bytes). No data is read."""

    __slots__ = ("dtype", "itemsize", "offset", "shape", "storage", "strides")

    def __init__(
        self,
        storage: StorageRef,
        offset: int,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
        dtype: str,
        itemsize: int,
    ) -> None:
        self.storage = storage
        self.offset = offset
        self.shape = shape
        self.strides = strides
        self.dtype = dtype
        self.itemsize = itemsize

    def __setstate__(self, state: Any) -> None:  # pickle BUILD on a tensor
        raise Refused("a BUILD on a tensor (only OrderedDict attributes are accepted)")

    def __reduce__(self) -> Any:
        raise TypeError("TensorRecord is not picklable")


def _count(x: Any) -> bool:
    return type(x) is int and x >= 0


def _ints(x: Any, what: str) -> tuple[int, ...]:
    if type(x) is not tuple or not all(type(v) is int for v in x):
        raise Refused(f"a tensor {what} that is not a tuple of integers ({type(x).__name__})")
    if any(v < 0 for v in x):
        raise Refused(f"a tensor with negative {what} {x}")
    return x


def _record(
    storage: Any, offset: Any, size: Any, stride: Any, dtype: DtypeMarker | None = None
) -> TensorRecord:
    if not isinstance(storage, StorageRef):
        raise Refused(f"a tensor rebuilt from a {type(storage).__name__}, not a storage")
    if not _count(offset):
        raise Refused(f"a tensor with storage offset {offset!r}")
    shape, strides = _ints(size, "size"), _ints(stride, "stride")
    if len(shape) != len(strides):
        raise Refused(f"a tensor with size {shape} but stride {strides}")
    if dtype is None:
        return TensorRecord(
            storage, offset, shape, strides, storage.stype.dtype, storage.stype.itemsize
        )
    return TensorRecord(storage, offset, shape, strides, dtype.name, dtype.itemsize)


def _flag_hooks(requires_grad: Any, hooks: Any) -> None:
    if type(requires_grad) is not bool:
        raise Refused(f"a tensor whose requires_grad is {type(requires_grad).__name__}")
    if not isinstance(hooks, dict) or hooks:
        raise Refused("a tensor with backward hooks")


def _rebuild_tensor(storage: Any, offset: Any, size: Any, stride: Any) -> TensorRecord:
    return _record(storage, offset, size, stride)


def _rebuild_tensor_v2(
    storage: Any,
    offset: Any,
    size: Any,
    stride: Any,
    requires_grad: Any = False,
    hooks: Any = None,
    metadata: Any = None,
) -> TensorRecord:
    _flag_hooks(requires_grad, {} if hooks is None else hooks)
    if metadata is not None and not isinstance(metadata, dict):
        raise Refused(f"a tensor with {type(metadata).__name__} metadata")
    return _record(storage, offset, size, stride)


def _rebuild_tensor_v3(
    storage: Any,
    offset: Any,
    size: Any,
    stride: Any,
    requires_grad: Any,
    hooks: Any,
    dtype: Any,
    metadata: Any = None,
) -> TensorRecord:
    if not isinstance(dtype, DtypeMarker):
        raise Refused(f"a tensor whose dtype is a {type(dtype).__name__}")
    _flag_hooks(requires_grad, hooks)
    if metadata is not None and not isinstance(metadata, dict):
        raise Refused(f"a tensor with {type(metadata).__name__} metadata")
    return _record(storage, offset, size, stride, dtype)


def _rebuild_parameter(data: Any, requires_grad: Any, hooks: Any) -> TensorRecord:
    if not isinstance(data, TensorRecord):
        raise Refused(f"a Parameter of a {type(data).__name__}")
    _flag_hooks(requires_grad, hooks)
    return data


def _rebuild_parameter_with_state(
    data: Any, requires_grad: Any, hooks: Any, state: Any
) -> TensorRecord:
    if state not in (None, {}) and not (isinstance(state, tuple) and not any(state)):
        raise Refused("a Parameter with Python attributes")
    return _rebuild_parameter(data, requires_grad, hooks)


def _allowed() -> dict[str, Any]:
    out: dict[str, Any] = {"collections.OrderedDict": OrderedDict}
    for f in (
        _rebuild_tensor,
        _rebuild_tensor_v2,
        _rebuild_tensor_v3,
        _rebuild_parameter,
        _rebuild_parameter_with_state,
    ):
        out[f"torch._utils.{f.__name__}"] = _Rebuild(f)
    for name, (size, dtype) in STORAGE_TYPES.items():
        marker = StorageType(name, size, dtype)
        if name == "UntypedStorage":
            out["torch.storage.UntypedStorage"] = marker
            out["torch.UntypedStorage"] = marker
        else:
            out[f"torch.{name}"] = marker
            out[f"torch.cuda.{name}"] = marker  # written from GPU tensors before torch 2
    for name, size in DTYPES.items():
        out[f"torch.{name}"] = DtypeMarker(name, size)
    return out


#: ``module.name`` -> the inert stand-in the unpickler hands out.
ALLOWED: dict[str, Any] = _allowed()


def scan(data: bytes) -> None:
    """Refuse, before anything is unpickled, any opcode or global the reader does not allow and
    any memo index beyond the number of opcodes. Raises :class:`Refused`.

    The whole pickle is walked first, so a refused global is named even when the pickle also
    uses an opcode torch refuses (``STACK_GLOBAL`` of protocol 4: its module and name are the
    two strings pushed before it)."""
    if len(data) > MAX_PICKLE_BYTES:
        raise Refused(f"a pickle of {len(data)} bytes (at most {MAX_PICKLE_BYTES} are read)")
    n_ops = 0
    opcode: str | None = None  # the first refused opcode
    strings: list[str] = []
    try:
        for op, arg, _ in pickletools.genops(io.BytesIO(data)):
            n_ops += 1
            if op.name == "GLOBAL":
                _check_global(*str(arg).split(" ", 1))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                _check_global(strings[-2], strings[-1])
            elif (
                op.name in ("BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET")
                and isinstance(arg, int)
                and arg >= n_ops  # a pickler numbers its memo 0, 1, ... as it goes
            ):
                raise Refused(f"memo index {arg} at opcode {n_ops}")
            if isinstance(arg, str) and op.name not in ("GLOBAL", "STACK_GLOBAL"):
                strings = [*strings[-1:], arg]
            elif op.name not in ("MEMOIZE", "BINPUT", "LONG_BINPUT", "PUT", "FRAME"):
                strings = []
            if op.name not in ALLOWED_OPCODES and opcode is None:
                opcode = op.name
    except (ValueError, UnicodeDecodeError) as exc:
        if opcode is None:
            raise Refused(f"malformed opcodes ({exc})") from None
    if opcode is not None:
        raise Refused(f"opcode: {opcode}")


def _check_global(module: str, name: str = "") -> None:
    full = f"{module}.{name}"
    if full in ALLOWED:
        return
    if full in TORCH_ONLY or (full.startswith("torch.") and full.endswith("Tensor")):
        raise Refused(
            f"unsupported: global {full} (specbound reads state dicts of dense tensors only)"
        )
    raise Refused(f"code execution: global {full}")


class RestrictedUnpickler(pickle.Unpickler):
    """``find_class`` hands out only :data:`ALLOWED` stand-ins; ``persistent_load`` only
    storage references, each also passed to ``on_storage``. Run :func:`scan` on the same bytes
    first (:func:`load` does)."""

    def __init__(self, file: Any, on_storage: Callable[[StorageRef], None] | None = None) -> None:
        super().__init__(file, encoding="ascii")
        self._on_storage = on_storage

    def find_class(self, module: str, name: str) -> Any:
        _check_global(module, name)
        return ALLOWED[f"{module}.{name}"]

    def persistent_load(self, pid: Any) -> StorageRef:
        if type(pid) is not tuple or len(pid) not in (5, 6):
            raise Refused(f"a persistent id that is not a storage ({type(pid).__name__})")
        kind, stype, key, location, numel = (_ascii(v) for v in pid[:5])
        if kind != "storage":
            raise Refused(f"a persistent id of kind {str(kind)[:40]!r} (only storages are read)")
        if not isinstance(stype, StorageType):
            raise Refused(f"a storage of type {type(stype).__name__}")
        if not isinstance(key, str) or not isinstance(location, str) or not _count(numel):
            raise Refused(f"a malformed storage id {str(pid)[:120]}")
        view = None
        if len(pid) == 6 and pid[5] is not None:
            v = pid[5]
            if not (type(v) is tuple and len(v) == 3 and _count(v[1]) and _count(v[2])):
                raise Refused(f"a malformed storage view {str(v)[:120]}")
            view = (v[1], v[2])
        ref = StorageRef(stype, key, numel, view)
        if self._on_storage is not None:
            self._on_storage(ref)
        return ref


def _ascii(v: Any) -> Any:
    if type(v) is bytes:
        try:
            return v.decode("ascii")
        except UnicodeDecodeError:
            raise Refused("a storage id with non-ASCII bytes") from None
    return v


def load(data: bytes, on_storage: Callable[[StorageRef], None] | None = None) -> Any:
    """The object the pickle ``data`` describes, tensors as :class:`TensorRecord`; every storage
    reference is passed to ``on_storage``. Raises :class:`Refused` for anything the reader does
    not allow or cannot parse."""
    scan(data)
    try:
        return RestrictedUnpickler(io.BytesIO(data), on_storage).load()
    except Refused:
        raise
    except RecursionError:
        raise Refused("a pickle nested too deeply") from None
    except Exception as exc:  # nothing but the stand-ins above ran
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        raise Refused(
            f"an object it cannot rebuild ({type(exc).__name__}{': ' if first else ''}{first})"
        ) from None
