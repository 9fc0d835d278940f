"""TrainingArgs: Hugging Face TrainingArguments over a ct_args handle. The
fields come from the library's own table, so this file names none of them."""

import ctypes
import enum
import numbers
import os
import sys
from typing import NamedTuple, Optional, Tuple

from ._errors import Status, check
from ._handle import OwnedHandle
from ._lib import Handle, lib


class ArgType(enum.IntEnum):
    """ct_arg_type: the C type of a field's value."""
    BOOL = 0
    INT = 1     # int64
    FLOAT = 2   # double
    STRING = 3  # free text, e.g. a path
    CHOICE = 4  # one of Field.choices


class Field(NamedTuple):
    name: str
    type: ArgType
    optional: bool        # may be None
    default: object       # typed: False, 8, 5e-05, "linear", None
    help: str
    choices: Tuple[str, ...]


def _encode(text):
    # Paths and values may carry any bytes the OS allows (surrogateescape),
    # but a NUL would silently cut the C string short.
    data = text.encode("utf-8", "surrogateescape")
    if b"\0" in data:
        raise ValueError("embedded NUL character in %r" % text)
    return data


def _decode(data):
    return data.decode("utf-8", "surrogateescape")


def _typed(field_type, optional, text):
    """A field's command-line text (as the library writes it) as a Python value."""
    if optional and text == "None":
        return None
    if field_type == ArgType.BOOL:
        return text == "True"
    if field_type == ArgType.INT:
        return int(text)
    if field_type == ArgType.FLOAT:
        return float(text)
    return text


def _read_fields():
    fields = {}
    for i in range(lib.ct_args_field_count()):
        field_type = ArgType(lib.ct_args_field_type(i))
        optional = lib.ct_args_field_optional(i) == 1
        choices = _decode(lib.ct_args_field_choices(i))
        field = Field(
            name=_decode(lib.ct_args_field_name(i)),
            type=field_type,
            optional=optional,
            default=_typed(field_type, optional, _decode(lib.ct_args_field_default(i))),
            help=_decode(lib.ct_args_field_help(i)),
            choices=tuple(choices.split("|")) if choices else (),
        )
        fields[field.name] = field
    return fields


_FIELDS = _read_fields()


class ArgFate(enum.IntEnum):
    """ct_arg_fate: what happens to an argument a Transformers user passes."""
    IMPLEMENTED = 0
    NO_EFFECT = 1   # accepted, with a warning saying why
    REFUSED = 2     # an error saying why and what to do instead


class KnownArgument(NamedTuple):
    name: str
    group: str      # "TrainingArguments", "ModelArguments", "DataTrainingArguments", "cputrain-qa"
    fate: ArgFate
    type: ArgType
    default: str    # command-line text; "a|b" lists several spellings
    reason: str     # "" when implemented


def _read_known():
    known = {}
    for i in range(lib.ct_args_known_count()):
        arg = KnownArgument(
            name=_decode(lib.ct_args_known_name(i)),
            group=_decode(lib.ct_args_known_group(i)),
            fate=ArgFate(lib.ct_args_known_fate(i)),
            type=ArgType(lib.ct_args_known_type(i)),
            default=_decode(lib.ct_args_known_default(i)),
            reason=_decode(lib.ct_args_known_reason(i)),
        )
        known[arg.name] = arg
    return known


_KNOWN = _read_known()


def _as_text(value):
    """A Python value as the command-line text the library parses."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (list, tuple, dict)) and not value:
        return "[]" if not isinstance(value, dict) else "{}"
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1


class TrainingArgs(OwnedHandle):
    """Training arguments with Hugging Face TrainingArguments' names, types
    and defaults: TrainingArgs(bf16=True, learning_rate=3e-5).

    Fields read and write as typed attributes (None for an unset optional);
    an unknown name is an AttributeError. The constructor validates the
    result, as TrainingArguments' __post_init__ does; attribute assignment
    does not (call validate()), so fields can be changed one at a time.
    Owns a C handle: use `with`, or close(); it is also freed when collected.
    """

    _free = lib.ct_args_free
    _what = "TrainingArgs"
    __slots__ = ("_handle", "__weakref__")

    def __init__(self, **overrides):
        self._handle = None
        handle = Handle()
        check(lib.ct_args_create(ctypes.byref(handle)))
        self._handle = handle
        try:
            for name, value in overrides.items():
                if self._field(name) is None and name not in _KNOWN:
                    raise TypeError("TrainingArgs() got an unexpected keyword argument %r" % name)
                setattr(self, name, value)
            self.validate()
        except BaseException:
            self.close()
            raise

    # ---- the field table ------------------------------------------------

    @staticmethod
    def fields():
        """Every field, in the library's table order."""
        return tuple(_FIELDS.values())

    @staticmethod
    def known_arguments():
        """Every TrainingArguments field of Transformers 4.x and every run_qa.py
        argument, with its fate here (implemented, no effect, refused) and the
        reason: the library's one table."""
        return tuple(_KNOWN.values())

    @staticmethod
    def help():
        """The --help table, as argparse prints it."""
        return _decode(lib.ct_args_help())

    @staticmethod
    def _field(name) -> Optional[Field]:
        """The field `name` names, following deprecated aliases (no_cuda)."""
        field = _FIELDS.get(name)
        if field is None and not name.startswith("_"):
            index = ctypes.c_size_t()
            if lib.ct_args_field_index(_encode(name), ctypes.byref(index)) == Status.OK:
                field = _FIELDS[_decode(lib.ct_args_field_name(index.value))]
        return field

    # ---- lifetime -------------------------------------------------------

    def copy(self):
        """An independent copy (ct_args_copy), unparsed arguments included."""
        new = TrainingArgs.__new__(type(self))
        new._handle = None
        handle = Handle()
        check(lib.ct_args_copy(self._live(), ctypes.byref(handle)))
        new._handle = handle
        return new

    __copy__ = copy

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        # Pickles (for multiprocessing workers) by value, not by handle.
        return (_from_dict, (type(self), self.to_dict()))

    # ---- typed attributes ------------------------------------------------

    def __getattr__(self, name):
        # Reached only for names that are not ordinary attributes.
        field = self._field(name)
        if field is None:
            raise AttributeError("%r object has no attribute or field %r"
                                 % (type(self).__name__, name))
        return self._get(field)

    def __setattr__(self, name, value):
        if name.startswith("_"):  # _handle, and a subclass's own state
            object.__setattr__(self, name, value)
            return
        field = self._field(name)
        if field is None and name in _KNOWN:
            # a TrainingArguments name that is not a field here: the library
            # warns that it has no effect, or refuses it with the reason
            check(lib.ct_args_set(self._live(), _encode(name), _encode(_as_text(value))))
            return
        if field is None:
            raise AttributeError("%r object has no field %r" % (type(self).__name__, name))
        self._set(field, value)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(_FIELDS))

    def _get(self, field):
        handle, name = self._live(), _encode(field.name)
        if field.optional:
            is_set = ctypes.c_int()
            check(lib.ct_args_is_set(handle, name, ctypes.byref(is_set)))
            if not is_set.value:
                return None
        if field.type == ArgType.BOOL:
            out = ctypes.c_int()
            check(lib.ct_args_get_bool(handle, name, ctypes.byref(out)))
            return bool(out.value)
        if field.type == ArgType.INT:
            out = ctypes.c_int64()
            check(lib.ct_args_get_int(handle, name, ctypes.byref(out)))
            return out.value
        if field.type == ArgType.FLOAT:
            out = ctypes.c_double()
            check(lib.ct_args_get_float(handle, name, ctypes.byref(out)))
            return out.value
        out = ctypes.c_char_p()
        check(lib.ct_args_get_string(handle, name, ctypes.byref(out)))
        return None if out.value is None else _decode(out.value)

    def _set(self, field, value):
        # Python types are checked here, so a wrong one is a TypeError naming
        # the field rather than whatever ctypes would make of it.
        handle, name = self._live(), _encode(field.name)
        if value is None:
            if not field.optional:
                raise TypeError("%s cannot be None" % field.name)
            check(lib.ct_args_unset(handle, name))
        elif field.type == ArgType.BOOL:
            if not isinstance(value, bool):
                self._wrong_type(field, value, "bool")
            check(lib.ct_args_set_bool(handle, name, int(value)))
        elif field.type == ArgType.INT:
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                self._wrong_type(field, value, "int")
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise OverflowError("%s: %d does not fit in 64 bits" % (field.name, value))
            check(lib.ct_args_set_int(handle, name, int(value)))
        elif field.type == ArgType.FLOAT:
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                self._wrong_type(field, value, "float")
            check(lib.ct_args_set_float(handle, name, float(value)))
        else:
            if field.type == ArgType.STRING and isinstance(value, os.PathLike):
                value = os.fspath(value)
            if not isinstance(value, str):
                self._wrong_type(field, value, "str")
            check(lib.ct_args_set_string(handle, name, _encode(value)))

    @staticmethod
    def _wrong_type(field, value, expected):
        hint = " (set(%r, text) parses command-line text)" % field.name if isinstance(value, str) else ""
        raise TypeError("%s must be %s%s, not %s%s" % (
            field.name, expected, " or None" if field.optional else "",
            type(value).__name__, hint))

    # ---- values as command-line text -------------------------------------

    def set(self, name, text):
        """Set a field from command-line text: set("learning_rate", "3e-5")."""
        check(lib.ct_args_set(self._live(), _encode(name), _encode(text)))

    def get(self, name):
        """A field as command-line text: "3e-05", "True", "None"."""
        handle, cname = self._live(), _encode(name)
        length = ctypes.c_size_t()
        check(lib.ct_args_get(handle, cname, None, 0, ctypes.byref(length)))
        buf = ctypes.create_string_buffer(length.value + 1)
        check(lib.ct_args_get(handle, cname, buf, len(buf), None))
        return _decode(buf.value)

    def is_set(self, name):
        """False when an optional field is None."""
        out = ctypes.c_int()
        check(lib.ct_args_is_set(self._live(), _encode(name), ctypes.byref(out)))
        return bool(out.value)

    # ---- command line, JSON, validation ----------------------------------

    def parse(self, argv=None, own_names=()):
        """Parse a command line as HfArgumentParser does (argv defaults to
        sys.argv[1:]) and validate the result; on failure nothing changes.
        Returns the arguments that are not training arguments, in order.
        own_names: the caller's own argument names (without "--"), so that
        an unambiguous prefix of any name counts as that name, as argparse's
        allow_abbrev does (one of own_names comes back written out in full),
        and an ambiguous one raises naming the candidates."""
        if isinstance(argv, (str, bytes)):
            raise TypeError("parse() takes a list of arguments, not one string")
        argv = sys.argv[1:] if argv is None else [os.fspath(a) for a in argv]
        array = (ctypes.c_char_p * len(argv))(*[_encode(a) for a in argv])
        own = [_encode(n) for n in own_names]
        names = (ctypes.c_char_p * max(len(own), 1))(*own)
        check(lib.ct_args_parse_with_names(self._live(), len(argv), array, names, len(own)))
        return self.unparsed()

    @staticmethod
    def closest_name(name, own_names=()):
        """The argument name nearest to `name` (TrainingArguments', the known
        ones and own_names), for "did you mean --...?"; None when none is
        close."""
        own = [_encode(n) for n in own_names]
        names = (ctypes.c_char_p * max(len(own), 1))(*own)
        found = lib.ct_args_closest_name(_encode(name), names, len(own))
        return _decode(found) if found is not None else None

    def unparsed(self):
        """What the last parse() / load_json() did not consume."""
        handle = self._live()
        return [_decode(lib.ct_args_unparsed(handle, i))
                for i in range(lib.ct_args_unparsed_count(handle))]

    def validate(self):
        """Raise CputrainError (naming the field and rule) unless valid."""
        check(lib.ct_args_validate(self._live()))

    def to_dict(self):
        return {field.name: self._get(field) for field in _FIELDS.values()}

    def save_json(self, path):
        """Write training_args.json (every field, json.dumps(indent=2) style)."""
        check(lib.ct_args_save_json(self._live(), os.fsencode(path)))

    def load_json(self, path):
        """Apply a JSON file of fields on top of the current values and
        validate; nothing changes on failure. Returns unknown keys as
        ["--key", "value", ...]."""
        check(lib.ct_args_load_json(self._live(), os.fsencode(path)))
        return self.unparsed()

    # ---- comparison and printing ------------------------------------------

    def __eq__(self, other):
        if not isinstance(other, TrainingArgs):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # mutable

    def __repr__(self):
        if not self._handle:
            return "<closed %s>" % type(self).__name__
        # The layout of TrainingArguments.__str__: sorted "name=value," lines.
        lines = "".join("%s=%s,\n" % item for item in sorted(self.to_dict().items()))
        return "%s(\n%s)" % (type(self).__name__, lines)


def _from_dict(cls, values):
    args = cls.__new__(cls)
    args._handle = None
    handle = Handle()
    check(lib.ct_args_create(ctypes.byref(handle)))
    args._handle = handle
    for name, value in values.items():
        setattr(args, name, value)
    return args

