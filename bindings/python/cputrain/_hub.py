"""Files from the Hugging Face Hub and its cache (hub.h): hf_hub_download
and the folder from_pretrained reads, in huggingface_hub's own cache layout,
so a cache Python's huggingface_hub filled serves here and the reverse."""

import ctypes
import os

from ._errors import check
from ._lib import HUB_PROGRESS_FN, Handle, lib

_PATH_BYTES = 4096
_KEYS = ("revision", "repo_type", "cache_dir", "endpoint", "token", "local_files_only",
         "timeout", "etag_timeout")


class _Options:
    """A ct_hub_options handle: huggingface_hub's defaults from the
    environment, then the keywords given (None keeps the default)."""

    def __init__(self, options, progress):
        unknown = sorted(set(options) - set(_KEYS))
        if unknown:
            raise TypeError("unknown Hub option(s) %s (known: %s)"
                            % (", ".join(unknown), ", ".join(_KEYS)))
        self.handle = Handle()
        check(lib.ct_hub_options_create(ctypes.byref(self.handle)))
        # Kept alive as long as the handle: C calls it during downloads.
        self.progress = HUB_PROGRESS_FN(
            lambda name, done, total, _user: progress(name.decode(), done, total)) \
            if progress else None
        try:
            for key, value in options.items():
                if value is None:
                    continue
                if isinstance(value, bool):
                    value = "true" if value else "false"
                check(lib.ct_hub_options_set(self.handle, key.encode(),
                                             os.fsencode(str(value))))
            if self.progress:
                lib.ct_hub_options_set_progress(self.handle, self.progress, None)
        except BaseException:
            self.close()
            raise

    def close(self):
        if self.handle:
            lib.ct_hub_options_free(self.handle)
            self.handle = Handle()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def hub_download(repo_id, filename, progress=None, **options):
    """The local path of `filename` of `repo_id` in the Hub cache, downloaded
    when needed (huggingface_hub.hf_hub_download). Options by huggingface_hub's
    names: revision, repo_type ("model"/"dataset"), cache_dir, endpoint, token,
    local_files_only, timeout, etag_timeout. progress(filename, done, total)
    is told of each download's bytes."""
    out = ctypes.create_string_buffer(_PATH_BYTES)
    with _Options(options, progress) as o:
        check(lib.ct_hub_download(repo_id.encode(), filename.encode(), o.handle, out,
                                  _PATH_BYTES))
    return os.fsdecode(out.value)


def model_folder(name_or_path, progress=None, **options):
    """The folder from_pretrained reads: a local folder as it is, else the
    Hub model's snapshot completed in the cache (config.json, weights,
    tokenizer files). Options as hub_download's."""
    out = ctypes.create_string_buffer(_PATH_BYTES)
    with _Options(options, progress) as o:
        check(lib.ct_hub_model_folder(os.fsencode(name_or_path), o.handle, out, _PATH_BYTES))
    return os.fsdecode(out.value)
