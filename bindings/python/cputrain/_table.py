"""Table: the records of a CSV, JSON, Parquet or Arrow data file (a
ct_table), read as the datasets library reads them:

    t = Table("train.csv")
    t.column_names, t.column_types     # ["sentence", "label"], ["string", "int"]
    t[0]                               # {"sentence": "...", "label": 1}
"""

import ctypes

from ._errors import check
from ._handle import OwnedHandle
from ._lib import Handle, lib
from ._model import _path

_TYPES = ("null", "bool", "int", "float", "string", "list")


def _scalar(kind, pointer, length):
    address = ctypes.cast(pointer, ctypes.c_void_p).value
    if kind == 0 or not address:
        return None
    # by address and length: a string may hold NUL bytes
    text = ctypes.string_at(address, length.value).decode("utf-8", "surrogateescape")
    if kind == 1:
        return text.lower() == "true"
    if kind == 2:
        return int(text)
    if kind == 3:
        return float(text)
    return text


class Table(OwnedHandle):
    """The rows of a .csv, .json or .jsonl file; t[i] is row i as a dict."""

    __slots__ = ("_handle", "__weakref__")
    _free = lib.ct_table_free
    _what = "Table"

    def __init__(self, path):
        handle = Handle()
        check(lib.ct_table_load(_path(path, "path"), ctypes.byref(handle)))
        self._handle = handle.value

    @classmethod
    def load_dataset(cls, name, config=None, split="train", **hub_options):
        """datasets.load_dataset(name, config, split=split) without Python's
        datasets: the datasets cache's Arrow files, else the dataset repo's
        Parquet files through the Hub cache and the Hub (hub_options as
        hub_download's)."""
        from ._hub import _Options  # the Hub's options, with datasets' repo type
        handle = Handle()
        with _Options(dict(hub_options, repo_type="dataset"), None) as o:
            check(lib.ct_table_load_dataset(name.encode(), config.encode() if config else None,
                                            split.encode(), o.handle, ctypes.byref(handle)))
        self = object.__new__(cls)
        self._handle = handle.value
        return self

    def __len__(self):
        return lib.ct_table_rows(self._live())

    @property
    def column_names(self):
        h = self._live()
        return [lib.ct_table_column_name(h, k).decode() for k in range(lib.ct_table_columns(h))]

    @property
    def column_types(self):
        h = self._live()
        return [_TYPES[lib.ct_table_column_type(h, k)] for k in range(lib.ct_table_columns(h))]

    def __getitem__(self, row):
        h = self._live()
        if not 0 <= row < len(self):
            raise IndexError("row %d outside the table's %d" % (row, len(self)))
        out, text, length = {}, ctypes.c_char_p(), ctypes.c_size_t()
        for k, name in enumerate(self.column_names):
            kind = lib.ct_table_cell(h, row, k, ctypes.byref(text), ctypes.byref(length))
            if kind == 5:
                items = []
                for i in range(lib.ct_table_list_size(h, row, k)):
                    item = lib.ct_table_list_item(h, row, k, i, ctypes.byref(text),
                                                  ctypes.byref(length))
                    items.append(_scalar(item, text, length))
                out[name] = items
            else:
                out[name] = _scalar(kind, text, length)
        return out
